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
    @Attribute(validation: "SELF BEGINSWITH 'L' AND SELF != 'LX'") var label: String = "L0"
    /// No rule but its type's range.
    var tally: Int16 = 0

    /// Core Data's validate<Key>: found by @Entity, run with the model's rules.
    func validateCode(_ value: inout String) throws {
        guard !value.isEmpty, value.allSatisfy(\.isLetter) else { throw LettersOnly() }
        value = value.uppercased()
    }

    func validateNote(_ value: inout String?) throws {
        if let note = value, note.count > 10 { throw PostgresDataError.validation([ValidationFailure(objectID: objectID, key: "note", reason: "is longer than 10 characters")]) }
    }

    @Relationship(deleteRule: .cascade, inverse: \Voucher.ledger) var vouchers: Set<Voucher>

    /// Not a rule: its name is not validate + a persistent key.
    func validateEverything() throws {}
}

@Entity final class Voucher: ManagedObject {
    var amount: Int = 0
    /// Required: never nil in a saved row.
    var ledger: Ledger
}

@Suite struct PerKeyValidationTests {
    /// A store of ledgers and a context on it.
    func store() async throws -> (PersistentContainer, ManagedObjectContext) {
        let configuration = try await TestDatabase.fresh(prefix: "pd_validation")
        let container = PersistentContainer(name: "Ledgers", model: ManagedObjectModel(Ledger.self, Voucher.self))
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        return (container, container.newBackgroundContext())
    }

    /// The validation failures a save of `context` throws (an issue when it saves instead).
    func failuresOfSaving(_ context: ManagedObjectContext) async throws -> [ValidationFailure] {
        do {
            try await context.save()
            Issue.record("the save should have failed")
            return []
        } catch PostgresDataError.validation(let failures) {
            return failures
        }
    }

    @Test func validateValueRunsTheModelRulesThenTheKeysOwnRuleWhichMayReplaceTheValue() throws {
        let model = ManagedObjectModel(Ledger.self, Voucher.self)
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
        let (container, context) = try await store()
        try await context.perform {
            let good = Ledger(context: context)
            good.code = "ok"
            let bad = Ledger(context: context)
            bad.code = "no-way"
            bad.balance = -5
            bad.note = "far too long a note"
            let failures = try await failuresOfSaving(context)
            #expect(Set(failures.compactMap(\.key)) == ["code", "balance", "note"])
            #expect(failures.allSatisfy { $0.objectID == bad.objectID })
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

    /// An attribute with no rule of its own still holds only what its type stores: an integer
    /// out of an `Int16`'s range, set by key, fails the save rather than being truncated on its
    /// way to the database.
    @Test func aSaveRefusesAnIntegerOutOfItsAttributesRange() async throws {
        let (container, context) = try await store()
        try await context.perform {
            let ledger = Ledger(context: context)
            ledger.code = "ok"
            try ledger.setPrimitiveValue(.integer(40_000), forKey: "tally")
            let failures = try await failuresOfSaving(context)
            #expect(failures.map(\.key) == ["tally"])
            #expect(failures.first?.reason == "is 40000, out of the range of integer16")
            ledger.tally = -7
            try await context.save()
        }
        #expect(try await container.rawIntegers("SELECT tally FROM ledger") == [-7])
    }

    @Test func aValidationPredicateIsANamedCheckConstraintOfItsColumn() throws {
        let sql = ManagedObjectModel(Ledger.self, Voucher.self).createSchemaSQL()
        #expect(sql.contains(#"CONSTRAINT "ledger_label_valid" CHECK (("label" LIKE (replace(replace(replace('L'::text, '\', '\\'), '%', '\%'), '_', '\_') || '%')) AND ("label" IS DISTINCT FROM 'LX'::text))"#), "\(sql)")
    }

    @Test func aValidationPredicateHoldsBeforeASaveAndInTheDatabase() async throws {
        let (container, context) = try await store()
        try await context.perform {
            let ledger = Ledger(context: context)
            ledger.code = "ok"
            ledger.label = "Q1"
            let failures = try await failuresOfSaving(context)
            #expect(failures.map(\.key) == ["label"])
            #expect(failures.first?.reason == "does not satisfy SELF BEGINSWITH 'L' AND SELF != 'LX'")
            var candidate = AttributeValue.string("LX")
            #expect(throws: PostgresDataError.self) { try ledger.validateValue(&candidate, forKey: "label") }
            var good = AttributeValue.string("L7")
            try ledger.validateValue(&good, forKey: "label")
            #expect(ledger.label == "Q1")          // the candidate only stood in
            ledger.label = "L1"
            try await context.save()
        }
        // A batch update bypasses the objects; the database holds it to the same rule.
        var update = BatchUpdateRequest(entityName: "Ledger")
        update.propertiesToUpdate = ["label": "LX"]
        await #expect { try await context.execute(update) } throws: { error in
            guard case PostgresDataError.constraintViolation(let constraint, let name, let underlying) = error else { return false }
            return name == "ledger_label_valid" && underlying.sqlState?.rawValue == "23514"
                && constraint?.keys == ["label"] && constraint?.rule == "label: SELF BEGINSWITH 'L' AND SELF != 'LX'"
        }
        #expect(try await container.rawStrings("SELECT label FROM ledger") == ["L1"])
    }
}

/// Core Data's smaller object APIs: key-based primitives and relationship introspection.
@Suite struct PrimitiveKeyTests {
    @Test func shouldRefreshRefetchedObjectsRefillsUnchangedObjectsWhoseRowsMoved() async throws {
        let container = try await makeContainer()
        try await container.performBackgroundTask { context in
            for name in ["one", "two"] {
                let item = Item(context: context)
                item.name = name
                item.weight = 1
            }
            try context.save()
        }
        let context = container.newBackgroundContext()
        context.retainsRegisteredObjects = true  // read by ID in later blocks
        let sorted = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])
        try await context.perform {
            let items = try context.fetch(sorted)
            #expect(items[0].weight == 1)  // Holds its values now.
            items[1].notes = "local"
        }
        try await container.rawExecute("UPDATE item SET weight = 9")
        try await context.perform {
            // By default, as in Core Data, objects holding values keep them.
            #expect(try context.fetch(sorted).map(\.weight) == [1, 1])
            var refreshing = sorted
            refreshing.shouldRefreshRefetchedObjects = true
            let items = try context.fetch(refreshing)
            // The unchanged object takes the row; the changed one keeps its own state.
            #expect(items.map(\.weight) == [9, 1])
            #expect(items[1].notes == "local")
        }
    }

    @Test func deletesPropagateAsTheObjectGoesOrAtTheSave() async throws {
        let container = try await makeContainer()
        for deferred in [false, true] {
            let context = container.newBackgroundContext()
            context.propagatesDeletesAtEndOfEvent = !deferred
            try await context.perform {
                let list = TodoList(context: context)
                list.title = deferred ? "later" : "now"
                let item = Item(context: context)
                item.name = "x"
                item.list = list
                try context.save()
                context.delete(list)
                // The cascade applies at once by default, at the save when deferred.
                #expect(item.isDeleted == !deferred)
                try context.save()
                #expect(item.isDeleted || item.managedObjectContext == nil)
            }
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [0])
        #expect(try await container.rawIntegers("SELECT count(*) FROM todo_list") == [0])
    }

    @Test func refreshAllObjectsReadsTheNewestValuesUnderUnsavedChanges() async throws {
        let container = try await makeContainer()
        let (first, second) = try await container.performBackgroundTask { context in
            let items = ["one", "two"].map { name in
                let item = Item(context: context)
                item.name = name
                item.weight = 1
                return item
            }
            try context.save()
            return (items[0].objectID, items[1].objectID)
        }
        let context = container.newBackgroundContext()
        context.retainsRegisteredObjects = true  // read by ID in later blocks
        try await context.perform {
            let one = try #require(try context.existingObject(with: first) as? Item)
            let two = try #require(try context.existingObject(with: second) as? Item)
            #expect(one.weight == 1)
            two.name = "two (edited)"
        }
        try await container.rawExecute("UPDATE item SET weight = 7")
        try await context.perform {
            let one = try #require(context.registeredObject(for: first) as? Item)
            let two = try #require(context.registeredObject(for: second) as? Item)
            #expect(one.weight == 1)  // Still the values read before.
            context.refreshAllObjects()
            #expect(one.isFault && !two.isFault)
            #expect(one.weight == 7)
            #expect(two.weight == 7 && two.name == "two (edited)" && two.hasChanges)
            try context.save()  // The newest version was read: no conflict.
        }
        #expect(try await container.rawStrings("SELECT name FROM item ORDER BY name") == ["one", "two (edited)"])
    }

    @Test func changedValuesForCurrentEventAreTheOldValuesSinceTheLastEvent() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        try await context.perform { () throws in
            let item = Item(context: context)
            item.name = "milk"
            item.weight = 1
            try context.save()
            // Before any event: measured from the committed values.
            item.weight = 2
            #expect(item.changedValuesForCurrentEvent().count == 1)
            #expect(item.changedValuesForCurrentEvent()["weight"].map { "\($0)" } == "1")
            context.processPendingChanges()
            // A new event: nothing changed in it yet.
            #expect(item.changedValuesForCurrentEvent().isEmpty)
            item.name = "oat milk"
            item.weight = 3
            let changed = item.changedValuesForCurrentEvent()
            #expect(Set(changed.keys) == ["name", "weight"])
            #expect(changed["name"] as? String == "milk" && changed["weight"].map { "\($0)" } == "2")
            // changedValues() still spans everything since the save, with the new values.
            #expect(item.changedValues()["weight"].map { "\($0)" } == "3")
            context.processPendingChanges()
            item.weight = 2
            #expect(item.changedValuesForCurrentEvent()["weight"].map { "\($0)" } == "3")
            try context.save()
            #expect(item.changedValuesForCurrentEvent().isEmpty)
        }
    }

    @Test func primitivesByKeyAndRelationshipsWithoutFaulting() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        let (listID, itemIDs) = try await context.perform { () throws in
            let list = TodoList(context: context)
            list.title = "groceries"
            var items: [Item] = []
            for name in ["milk", "eggs"] {
                let item = Item(context: context)
                item.name = name
                item.list = list
                items.append(item)
            }
            try context.save()
            // IDs are permanent once saved.
            return (list.objectID, items.map(\.objectID))
        }
        let reader = container.newBackgroundContext()
        try await reader.perform { () throws in
            let list = reader.object(with: listID)
            // Nothing loaded yet: the to-many is a fault; its IDs come without objects.
            #expect(try list.hasFault(forRelationshipNamed: "items"))
            #expect(Set(try list.objectIDs(forRelationshipNamed: "items")) == Set(itemIDs))
            #expect(reader.registeredObjects.count == 1)
            #expect(throws: PostgresDataError.self) { try list.hasFault(forRelationshipNamed: "title") }
            #expect(throws: PostgresDataError.self) { try list.objectIDs(forRelationshipNamed: "nope") }

            let item = reader.object(with: itemIDs[0])
            #expect(item.primitiveValue(forKey: "name") == .string("milk"))
            #expect(item.primitiveValue(forKey: "list") == .object(listID))
            #expect(!item.hasPersistentChangedValues)
            try item.setPrimitiveValue(.string("oat milk"), forKey: "name")
            #expect(item.hasPersistentChangedValues)
            #expect(throws: PostgresDataError.self) { try item.setPrimitiveValue(.integer(1), forKey: "name") }
            #expect(throws: PostgresDataError.self) { try item.setPrimitiveValue(.object(itemIDs[1]), forKey: "list") }
            #expect(throws: PostgresDataError.self) { try list.setPrimitiveValue(.null, forKey: "items") }
            // An unknown key reads nil and is thrown by the next save.
            #expect(item.primitiveValue(forKey: "colour") == nil)
            #expect(throws: PostgresDataError.self) { try reader.save() }
        }
    }

    @Test func aRequiredRelationshipOfARowDeletedElsewhereReadsAsADeletedPlaceholder() async throws {
        let (container, context) = try await PerKeyValidationTests().store()
        let voucherID = try await context.perform { () throws in
            let ledger = Ledger(context: context)
            ledger.code = "main"
            let voucher = Voucher(context: context)
            voucher.amount = 5
            voucher.ledger = ledger
            try context.save()
            return voucher.objectID
        }
        _ = try await container.rawIntegers("WITH gone AS (DELETE FROM voucher RETURNING 1) SELECT count(*) FROM gone")
        let reader = container.newBackgroundContext()
        try await reader.perform { () throws in
            let voucher = try #require(reader.object(with: voucherID) as? Voucher)
            // The row is gone: the fault reads as deleted, and its required relationship,
            // nil now, is a placeholder rather than a stopped process.
            let ledger = voucher.ledger
            #expect(voucher.isDeleted)
            #expect(ledger.isDeleted)
            #expect(ledger.managedObjectContext == nil)
            #expect(ledger.code == "")
        }
    }
}
