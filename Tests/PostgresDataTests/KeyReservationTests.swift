import Foundation
import PostgresClient
@testable import PostgresData
import Testing

/// How far `item`'s identity sequence has gone (0 before its first value).
private func drawnKeys(_ container: PersistentContainer) async throws -> Int64 {
    try await container.rawIntegers("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM item_id_seq").first ?? -1
}

/// Polls until `condition` holds, for up to `seconds`; returns whether it did.
private func eventually(seconds: Int = 10, _ condition: () async throws -> Bool) async throws -> Bool {
    for _ in 0..<(seconds * 20) {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}

private func insertItems(_ range: Range<Int>, into context: ManagedObjectContext) -> [Item] {
    range.map { index in
        let item = Item(context: context)
        item.name = "n\(index)"
        item.weight = index % 1000
        return item
    }
}

/// A context inserting many objects reserves their keys before the save (``KeyReservation``).
@Suite struct KeyReservationTests {
    @Test func keysAreDrawnWhileObjectsAreInsertedAndTheSaveUsesEachOnce() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        try await context.perform {
            let items = insertItems(0..<10_000, into: context)
            // Drawn in the background before any save; the objects keep temporary IDs.
            #expect(try await eventually { try await drawnKeys(container) >= Int64(KeyReservation.threshold) })
            #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [0])
            let temporary = items.filter { $0.objectID.isTemporaryID }.count
            #expect(temporary == 10_000)
            try await context.save()
            // Every key drawn went to one object, in the order they were inserted.
            #expect(items.map { $0.objectID.primaryKey ?? 0 } == Array(1...10_000))
        }
        #expect(try await drawnKeys(container) == 10_000)
        #expect(try await container.rawStrings("SELECT name FROM item ORDER BY id") == (0..<10_000).map { "n\($0)" })
        #expect(try await container.rawIntegers("SELECT id FROM item WHERE name = 'n4321'") == [4_322])
    }

    @Test func keysOfObjectsDeletedOrRolledBackAreSkippedNeverReused() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        let last = try await context.perform {
            let first = insertItems(0..<5_000, into: context)
            #expect(try await eventually { try await drawnKeys(container) >= Int64(KeyReservation.threshold) })
            let reservedBeforeRollback = try await drawnKeys(container)
            context.rollback()
            #expect(first.allSatisfy { $0.managedObjectContext == nil })
            let items = insertItems(5_000..<11_000, into: context)
            for item in items[..<2_000] { context.delete(item) }
            try await context.save()
            let keys = items[2_000...].map { $0.objectID.primaryKey ?? 0 }
            #expect(Set(keys).count == 4_000)
            #expect(keys == keys.sorted())
            #expect(keys.allSatisfy { $0 > reservedBeforeRollback }, "a key reserved before the rollback was used")
            return keys.last ?? .max
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [4_000])
        // Another context's save draws past every key reserved, used or not.
        let other = container.newBackgroundContext()
        let next = try await other.perform {
            let item = Item(context: other)
            item.name = "other"
            try other.save()
            return item.objectID.primaryKey ?? 0
        }
        #expect(next > last)
        #expect(try await container.rawIntegers("SELECT count(DISTINCT id) FROM item") == [4_001])
    }

    /// A large save of new objects pointing at other new objects: every foreign key is written
    /// with the key its target took, after deletions left holes among the inserted objects.
    @Test func newObjectsPointingAtNewObjectsAreWrittenWithTheirTargetsKeys() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        try await context.perform {
            let lists = (0..<20).map { index -> TodoList in
                let list = TodoList(context: context)
                list.title = "list \(index)"
                return list
            }
            let items = insertItems(0..<6_000, into: context)
            for (index, item) in items.enumerated() { item.list = lists[index % 20] }
            for (index, item) in items.enumerated() where index % 3 == 1 { context.delete(item) }
            try await context.save()
            let kept = items.filter { !$0.isDeleted }
            #expect(kept.count == 4_000)
            #expect(kept.allSatisfy { !$0.objectID.isTemporaryID } && lists.allSatisfy { !$0.objectID.isTemporaryID })
            #expect(lists.map(\.items.count) == Array(repeating: 200, count: 20))
            for list in lists { #expect(list.items.allSatisfy { $0.list === list }) }
        }
        let wrong = try await container.rawIntegers("""
            SELECT count(*) FROM item JOIN todo_list ON todo_list.id = item.list_id
            WHERE todo_list.title <> 'list ' || (substring(item.name FROM 2)::int % 20)
            """)
        #expect(wrong == [0])
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE list_id IS NOT NULL") == [4_000])
    }

    /// A reservation still on its way when the save starts is waited for while the save
    /// draws the keys it does not cover: both wait on the server at once. Their `nextval`s
    /// may interleave; the objects take the keys ascending, each once.
    @Test func aReservationOnItsWayIsWaitedForWhileTheSaveDrawsTheRest() async throws {
        let container = try await makeContainer()
        let blocker = try await Connection.connect(container.persistentStoreCoordinator.connectionPool.configuration)
        // (A sequence cannot be locked by `LOCK TABLE`; altering it holds a lock that `nextval` waits for.)
        try await blocker.execute(script: "BEGIN; ALTER SEQUENCE item_id_seq INCREMENT BY 1")
        let context = container.newBackgroundContext()
        async let saved = context.perform { () async throws -> [Int64] in
            let items = insertItems(0..<12_000, into: context)
            try await context.save()
            return items.map { $0.objectID.primaryKey ?? 0 }
        }
        let waiting = "SELECT count(*) FROM pg_locks WHERE relation = 'item_id_seq'::regclass AND NOT granted"
        // (The 12,000 objects are inserted meanwhile: under the thread sanitizer, with the whole
        // suite running, the two waits were not both there after 10 s.)
        let bothWait = try await eventually(seconds: 120) { try await container.rawIntegers(waiting) == [2] }
        try await blocker.execute(script: "COMMIT")
        await blocker.close()
        let keys = try await saved
        #expect(bothWait, "the save did not draw its missing keys while the reservation waited")
        // (The first object out of place, not a 12,000-key array, when it fails.)
        let misplaced = zip(keys, Int64(1)...).first { $0.0 != $0.1 }
        #expect(keys.count == 12_000 && misplaced == nil)
        #expect(try await drawnKeys(container) == 12_000)
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE name = 'n' || (id - 1)") == [12_000])
    }

    /// `obtainPermanentIDs(for:)` takes the same keys as a save: the reservation's, waited for,
    /// and the rest drawn meanwhile, ascending; the save then writes the rows with them.
    @Test func permanentIDsObtainedEarlyTakeTheReservedKeys() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        let keys = try await context.perform { () async throws -> [Int64] in
            let items = insertItems(0..<6_000, into: context)
            try await context.obtainPermanentIDs(for: items)
            let keys = items.map { $0.objectID.primaryKey ?? 0 }
            try await context.save()
            let keptTheirKeys = items.map { $0.objectID.primaryKey ?? 0 } == keys
            #expect(keptTheirKeys, "the save changed IDs obtained before it")
            return keys
        }
        let misplaced = zip(keys, Int64(1)...).first { $0.0 != $0.1 }
        #expect(keys.count == 6_000 && misplaced == nil)
        #expect(try await drawnKeys(container) == 6_000)
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE name = 'n' || (id - 1)") == [6_000])
    }

    @Test func aChildContextReservesNothing() async throws {
        let container = try await makeContainer()
        let parent = container.newBackgroundContext()
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        await child.perform { _ = insertItems(0..<5_000, into: child) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await drawnKeys(container) == 0)
        try await child.perform { try child.save() }
        try await parent.perform { try parent.save() }
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [5_000])
        #expect(try await drawnKeys(container) == 5_000)
    }

    /// A reservation that fails is forgotten: the save draws the keys itself, reports its
    /// error with its SQLSTATE, loses nothing, and succeeds once the cause is gone.
    @Test func aFailedReservationLeavesTheSaveToDrawAndReport() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        // The store knows the sequence by this name: renamed, `nextval` cannot find it.
        try await container.rawExecute("ALTER SEQUENCE item_id_seq RENAME TO item_id_seq_moved")
        await context.perform { _ = insertItems(0..<6_000, into: context) }
        try await Task.sleep(for: .milliseconds(300))
        let error = await context.perform { () -> PostgresDataError? in
            do { try context.save() } catch let error as PostgresDataError { return error } catch { return nil }
            return nil
        }
        guard case .database(let failure)? = error else {
            Issue.record("expected the save to fail in the database, got \(String(describing: error))")
            return
        }
        #expect(failure.sqlState == .undefinedTable)
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [0])
        try await container.rawExecute("ALTER SEQUENCE item_id_seq_moved RENAME TO item_id_seq")
        try await context.perform {
            #expect(context.insertedObjects.count == 6_000)
            try context.save()
            #expect(Set(context.registeredObjects.compactMap(\.objectID.primaryKey)).count == 6_000)
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [6_000])
    }

    /// The count of waiting objects a context keeps (no server): runs of one entity and the
    /// runs of others between them add up per entity, in the order entities were first met;
    /// a reservation falls due from the threshold on, every 512 objects.
    @Test func theWaitingObjectsAreCountedPerEntityAcrossRuns() {
        let a = EntityDescription(name: "A", properties: [.attribute(AttributeDescription(name: "x", type: .integer64))])
        let b = EntityDescription(name: "B", properties: [.attribute(AttributeDescription(name: "y", type: .integer64))])
        var demand = KeyReservation.Demand()
        var due: [Int] = []
        for index in 1...KeyReservation.threshold + 1_024 {
            // A, A, B, A, A, B, …: runs of two and of one.
            if demand.note(index % 3 == 0 ? b : a) { due.append(index) }
        }
        #expect(due == [KeyReservation.threshold, KeyReservation.threshold + 512, KeyReservation.threshold + 1_024])
        #expect(demand.count == KeyReservation.threshold + 1_024)
        let counts = demand.take()
        let total = KeyReservation.threshold + 1_024
        #expect(counts.map(\.0.name) == ["A", "B"])
        #expect(counts.map(\.1) == [total - total / 3, total / 3])
        #expect(demand.count == 0)
        #expect(demand.take().isEmpty)
        // Counting starts over after a take: a run of B alone.
        _ = demand.note(b)
        _ = demand.note(b)
        #expect(demand.take().map(\.1) == [2])
    }
}
