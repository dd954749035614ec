import Foundation
@testable import PostgresData
import Testing

/// A large fetch's decoding task makes the objects of the batches it is ahead with
/// (``ObjectsMadeAhead``): they stand in only for rows the context has no object for, and
/// are then registered, filled and uniqued like the objects the context makes itself.
@Suite struct ObjectsMadeAheadTests {
    /// Every batch after the first carries objects made ahead (a lead of 0); objects the
    /// context holds already, one with an unsaved change, stay the objects of their rows,
    /// and so does every object of a refetch.
    @Test func objectsMadeAheadStandInOnlyForRowsWithoutAnObject() async throws {
        let container = try await makeContainer()
        let rows = 12_345
        try await container.rawExecute("""
            INSERT INTO item (name, created_at, done, weight, notes)
            SELECT 'item ' || i, to_timestamp(i), i % 3 = 0, i % 1000, CASE WHEN i % 2 = 0 THEN 'even' END
            FROM generate_series(1, \(rows)) AS i
            """)
        for asFaults in [false, true] {
            let context = container.newBackgroundContext()
            let problems = try await context.perform { () throws -> [String] in
                context.objectsMadeAheadLead = 0
                // Rows of the second and third batches, registered first; one changed.
                let heldNames = ["item 6000", "item 9999", "item 12000"]
                let held = try context.fetch(FetchRequest<Item>(predicate: try FetchPredicate(format: "name IN %@", heldNames),
                                                                sortDescriptors: [FetchSortDescriptor(key: "createdAt")]))
                var problems: [String] = []
                if held.count != 3 { problems.append("\(held.count) held objects") }
                held.first?.weight = 7

                var request = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "createdAt")])
                request.returnsObjectsAsFaults = asFaults
                let items = try context.fetch(request)
                if items.count != rows { problems.append("\(items.count) objects") }
                if context.registeredObjects.count != rows { problems.append("\(context.registeredObjects.count) registered") }
                if Set(items.map { ObjectIdentifier($0) }).count != rows { problems.append("objects repeated") }
                for object in held where !items.contains(where: { $0 === object }) {
                    problems.append("\(object.name) is not the object held before the fetch")
                }
                for (position, item) in items.enumerated() {
                    let number = position + 1
                    if item.managedObjectContext !== context || context.registeredObject(for: item.objectID) !== item {
                        problems.append("row \(number) is not registered in the context")
                    }
                    // (Faults: merging the changed object in sort order fires some of them.)
                    if item.objectID.isTemporaryID || (!asFaults && item.isFault) {
                        problems.append("row \(number): ID \(item.objectID), fault \(item.isFault)")
                    }
                    let weight = number == 6000 ? 7 : number % 1000
                    let expected = ("item \(number)", weight, number % 3 == 0, number % 2 == 0 ? "even" : nil, Double(number))
                    if (item.name, item.weight, item.done, item.notes, item.createdAt.timeIntervalSince1970) != expected || item.rowVersion == nil {
                        problems.append("row \(number): \(item.name), \(item.weight), \(item.done), \(item.notes ?? "nil")")
                    }
                }
                // A refetch: every row has its object, whatever the task made for it.
                let again = try context.fetch(request)
                if again.count != rows || zip(items, again).contains(where: { $0 !== $1 }) {
                    problems.append("the refetch gave other objects")
                }
                if context.registeredObjects.count != rows { problems.append("\(context.registeredObjects.count) registered after the refetch") }
                if !context.updatedObjects.contains(where: { $0 === held.first }) || context.updatedObjects.count != 1 {
                    problems.append("updated objects: \(context.updatedObjects.map(\.objectID))")
                }
                context.reset()
                return problems
            }
            #expect(problems.isEmpty, "returnsObjectsAsFaults \(asFaults): \(problems.prefix(5))")
        }
    }

    /// The decoding task itself: with a lead of 0, every batch after the first carries a
    /// bare fault of the entity for each row, with that row's ID, handed over once; with a
    /// lead no channel reaches, none does.
    @Test func theDecodingTaskMakesAFaultPerRowOnlyWhenAhead() async throws {
        let container = try await makeContainer()
        try await container.rawExecute("""
            INSERT INTO item (name, created_at, done, weight) SELECT 'item ' || i, to_timestamp(i), false, 0 FROM generate_series(1, 12345) AS i
            """)
        let coordinator = container.persistentStoreCoordinator
        let entity = try #require(coordinator.managedObjectModel.entity(for: Item.self))
        let (sql, bindings) = try FetchRequest<Item>().sql(for: entity, columns: PersistentStoreCoordinator.selectList(entity))
        for lead in [0, Int.max] {
            let query = try await coordinator.querySnapshots(sql: sql, bindings: bindings, entity: entity, batchSize: 5_000,
                                                             cachesRows: false, access: nil)
            let rest = try #require(query.rest)
            let channel = BatchChannel<SnapshotBatch>()
            await rest.decode(batchSize: 5_000, into: channel, makingObjectsOf: entity, lead: lead)
            var problems: [String] = []
            var rows = query.first.count
            while let batch = try await channel.next() {
                rows += batch.count
                guard let made = batch.madeAhead else {
                    if lead == 0 { problems.append("a batch of \(batch.count) rows without objects") }
                    continue
                }
                if lead != 0 { problems.append("objects made for a consumer not behind") }
                for index in 0..<batch.count {
                    guard let object = made.take(index) else {
                        problems.append("row \(index): no object")
                        continue
                    }
                    if object.objectID != ManagedObjectID(entity: entity, primaryKey: batch.key(at: index)) || !(object is Item)
                        || !object.isFault || object.managedObjectContext != nil || made.take(index) != nil {
                        problems.append("row \(index): \(object.objectID), fault \(object.isFault)")
                    }
                }
            }
            #expect(rows == 12_345)
            #expect(problems.isEmpty, "lead \(lead): \(problems.prefix(5))")
        }
    }
}
