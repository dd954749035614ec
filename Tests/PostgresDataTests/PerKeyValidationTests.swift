import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import Testing

struct LettersOnly: Error, CustomStringConvertible {
    var description: String { "must hold letters only" }
}

@Entity final class Ledger: ManagedObject {
    var code: String = ""
    @Attribute(minValue: 0) var balance: Int = 0
    var note: String?

    /// Core Data's validate<Key>: found by @Entity, run with the model's rules.
    func validateCode(_ value: inout String) throws {
        guard !value.isEmpty, value.allSatisfy(\.isLetter) else { throw LettersOnly() }
        value = value.uppercased()
    }

    func validateNote(_ value: inout String?) throws {
        if let note = value, note.count > 10 { throw PostgresDataError.validation([ValidationFailure(objectID: objectID, key: "note", reason: "is longer than 10 characters")]) }
    }

    /// Not a rule: its name is not validate + a persistent key.
    func validateEverything() throws {}
}

@Suite struct PerKeyValidationTests {
    func container() async throws -> PersistentContainer {
        let configuration = try await TestDatabase.fresh(prefix: "pd_validation")
        let container = PersistentContainer(name: "Ledgers", model: ManagedObjectModel(Ledger.self))
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        return container
    }

    @Test func validateValueRunsTheModelRulesThenTheKeysOwnRuleWhichMayReplaceTheValue() throws {
        let model = ManagedObjectModel(Ledger.self)
        let ledger = Ledger(entity: try #require(model.entitiesByName["Ledger"]), insertInto: nil)
        var value = AttributeValue.string("abc")
        try ledger.validateValue(&value, forKey: "code")
        #expect(value == .string("ABC"))
        var digits = AttributeValue.string("a1")
        #expect { try ledger.validateValue(&digits, forKey: "code") } throws: { error in
            guard case PostgresDataError.validation(let failures) = error else { return false }
            return failures.map(\.key) == ["code"] && failures[0].reason == "must hold letters only"
        }
        // The model's rule first: a negative balance, a value of the wrong type.
        var negative = AttributeValue.integer(-1)
        #expect(throws: PostgresDataError.self) { try ledger.validateValue(&negative, forKey: "balance") }
        var wrongType = AttributeValue.integer(3)
        #expect(throws: PostgresDataError.self) { try ledger.validateValue(&wrongType, forKey: "code") }
        // An unknown key is an error, not a trap.
        var any = AttributeValue.null
        #expect { try ledger.validateValue(&any, forKey: "colour") } throws: { error in
            if case PostgresDataError.unknownKey = error { return true } else { return false }
        }
    }

    @Test func aSaveThrowsEveryObjectsFailuresTogetherWritesNothingAndKeepsTheValues() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        try await context.perform {
            let good = Ledger(context: context)
            good.code = "ok"
            let bad = Ledger(context: context)
            bad.code = "no-way"
            bad.balance = -5
            bad.note = "far too long a note"
            do {
                try await context.save()
                Issue.record("the save should have failed")
            } catch PostgresDataError.validation(let failures) {
                #expect(Set(failures.compactMap(\.key)) == ["code", "balance", "note"])
                #expect(failures.allSatisfy { $0.objectID == bad.objectID })
            }
            // Validation changed nothing: the rule's upper-casing is not kept by a save.
            #expect(good.code == "ok")
            #expect(bad.code == "no-way")
            bad.code = "fine"
            bad.balance = 0
            bad.note = nil
            try await context.save()
        }
        #expect(try await container.rawStrings("SELECT code FROM ledger ORDER BY code") == ["fine", "ok"])
    }
}
