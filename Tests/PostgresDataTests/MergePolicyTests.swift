import Foundation
import PostgresData
import Testing

/// Two contexts edit the same object; the second save meets the first one's row version.
@Suite struct MergePolicyTests {
    struct Outcome {
        var name: String
        var weight: Int64
        var done: Bool
        var error: PostgresDataError?
    }

    /// B saves name "B" and done = true; then A, which read the row before, saves name "A" and
    /// weight 5 under `policy`.
    func conflict(_ policy: MergePolicy) async throws -> Outcome {
        let container = try await makeContainer()
        let id = try await container.saveItem(named: "original")
        let a = container.newBackgroundContext()
        a.retainsRegisteredObjects = true  // read by ID in later blocks
        a.mergePolicy = policy
        let b = container.newBackgroundContext()
        try await a.perform { _ = try a.existingObject(with: id) }
        try await b.perform {
            let item = try #require(try b.existingObject(with: id) as? Item)
            item.name = "B"
            item.done = true
            try b.save()
        }
        let error = await captureDataError {
            try await a.perform {
                let item = try #require(a.registeredObject(for: id) as? Item)
                item.name = "A"
                item.weight = 5
                try a.save()
            }
        }
        if error == nil {
            // The context ends clean and holds what it wrote.
            let clean = await a.perform { !a.hasChanges }
            #expect(clean)
        }
        let rows = try await container.persistentStoreCoordinator.connectionPool.withConnection { connection in
            try await connection.query("SELECT name, weight, done FROM item").map { try $0.decode((String, Int64, Bool).self) }
        }
        let row = try #require(rows.first)
        return Outcome(name: row.0, weight: row.1, done: row.2, error: error)
    }

    @Test func errorPolicyThrowsTheConflictWithAllThreeVersionsAndWritesNothing() async throws {
        let outcome = try await conflict(.error)
        #expect(outcome.name == "B" && outcome.weight == 0 && outcome.done)
        guard case .mergeConflict(let conflicts)? = outcome.error else {
            Issue.record("expected a merge conflict, got \(String(describing: outcome.error))")
            return
        }
        let conflict = try #require(conflicts.first)
        #expect(conflicts.count == 1)
        #expect(conflict.cachedValues["name"] == .string("original"))
        #expect(conflict.objectValues["name"] == .string("A"))
        #expect(conflict.databaseValues?["name"] == .string("B"))
        #expect(conflict.databaseVersion != conflict.cachedVersion)
        #expect(outcome.error!.description.contains("name: cached original, object A, database B"))
    }

    @Test func oneRowChangedAmongSeveralInOnePipelinedSaveIsTheOnlyConflictAndNothingIsWritten() async throws {
        let container = try await makeContainer()
        let ids = [try await container.saveItem(named: "one"), try await container.saveItem(named: "two"),
                   try await container.saveItem(named: "three")]
        let a = container.newBackgroundContext()
        a.retainsRegisteredObjects = true  // read by ID in later blocks
        try await a.perform { for id in ids { _ = try a.existingObject(with: id) } }
        let pool = try container.persistentStoreCoordinator.connectionPool
        try await pool.withConnection { connection in
            try await connection.query("UPDATE item SET weight = 9 WHERE name = 'two'")
        }
        let error = await captureDataError {
            try await a.perform {
                for id in ids { (try #require(a.registeredObject(for: id) as? Item)).weight = 5 }
                try await a.save()
            }
        }
        guard case .mergeConflict(let conflicts)? = error else {
            Issue.record("expected a merge conflict, got \(String(describing: error))")
            return
        }
        #expect(conflicts.map(\.objectID) == [ids[1]])
        #expect(conflicts.first?.databaseValues?["weight"] == .integer(9))
        let weights = try await pool.withConnection { connection in
            try await connection.query("SELECT name, weight FROM item ORDER BY id").map { try $0.decode((String, Int64).self) }
        }
        #expect(weights.map(\.1) == [0, 9, 0])
        // The same context saves once it has taken the database's row.
        try await a.perform {
            a.refresh(try #require(a.registeredObject(for: ids[1])), mergeChanges: false)
            try await a.save()
        }
        let after = try await pool.withConnection { connection in
            try await connection.query("SELECT weight FROM item ORDER BY id").map { try $0.decode(Int64.self) }
        }
        #expect(after == [5, 9, 5])
    }

    @Test func storeTrumpKeepsTheDatabasesChangesAndWritesTheOthers() async throws {
        let outcome = try await conflict(.mergeByPropertyStoreTrump)
        #expect(outcome.error == nil)
        #expect(outcome.name == "B" && outcome.weight == 5 && outcome.done)
    }

    @Test func objectTrumpWritesTheObjectsChangesAndKeepsTheDatabasesOthers() async throws {
        let outcome = try await conflict(.mergeByPropertyObjectTrump)
        #expect(outcome.error == nil)
        #expect(outcome.name == "A" && outcome.weight == 5 && outcome.done)
    }

    @Test func overwriteWritesTheObjectsWholeState() async throws {
        let outcome = try await conflict(.overwrite)
        #expect(outcome.error == nil)
        #expect(outcome.name == "A" && outcome.weight == 5 && !outcome.done)
    }

    @Test func rollbackTakesTheDatabasesState() async throws {
        let outcome = try await conflict(.rollback)
        #expect(outcome.error == nil)
        #expect(outcome.name == "B" && outcome.weight == 0 && outcome.done)
    }

    @Test func aRowDeletedUnderneathIsAConflict() async throws {
        let container = try await makeContainer()
        let id = try await container.saveItem(named: "doomed")
        let a = container.newBackgroundContext()
        a.retainsRegisteredObjects = true  // read by ID in later blocks
        try await a.perform { _ = try a.existingObject(with: id) }
        try await container.rawExecute("DELETE FROM item")
        let error = await captureDataError {
            try await a.perform {
                (a.registeredObject(for: id) as? Item)?.weight = 3
                try a.save()
            }
        }
        guard case .mergeConflict(let conflicts)? = error else {
            Issue.record("expected a merge conflict, got \(String(describing: error))")
            return
        }
        #expect(conflicts.first?.databaseValues == nil)
        #expect(error!.description.contains("deleted by another transaction"))
        // Store trump: the object follows the store and leaves the context.
        a.mergePolicy = .mergeByPropertyStoreTrump
        try await a.perform {
            try a.save()
            #expect(a.registeredObject(for: id) == nil && !a.hasChanges)
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [0])
    }
}
