import Foundation
import PostgresData
import PostgresDataTesting
import Testing

/// Batch deletes: one DELETE … RETURNING id, delete rules by the database, contexts merged.
@Suite struct BatchDeleteTests {
    @Test func cascadeDeletesAndReportsTheRelatedRows() async throws {
        let container = try await makeContainer()
        let doomed = try await container.performBackgroundTask { context in
            var lists: [TodoList] = []
            for title in ["old", "new"] {
                let list = TodoList(context: context)
                list.title = title
                for index in 0..<3 {
                    let item = Item(context: context)
                    item.name = "\(title) \(index)"
                    item.list = list
                }
                lists.append(list)
            }
            try context.save()
            return lists[0].objectID
        }
        let view = container.viewContext
        let heldItem = try await view.perform { () throws -> ManagedObjectID in
            let items = try view.fetch(FetchRequest<Item>(predicate: try FetchPredicate(format: "list.title == 'old'")))
            return items[0].objectID
        }
        var delete = BatchDeleteRequest(fetchRequest: FetchRequest<TodoList>(predicate: try FetchPredicate(format: "title == 'old'")))
        delete.resultType = .objectIDs
        delete.contextsToMerge = [view]
        let result = try await container.newBackgroundContext().execute(delete)
        #expect(result.objectIDs == [doomed] && result.count == 1)
        #expect(result.cascadedObjectIDs.count == 3 && result.cascadedObjectIDs.contains(heldItem))
        #expect(try await container.rawStrings("SELECT name FROM item ORDER BY name") == ["new 0", "new 1", "new 2"])
        let stillThere = await view.perform { view.registeredObject(for: heldItem) != nil }
        #expect(!stillThere)
    }

    @Test func aFetchRequestsWindowChoosesTheRowsInItsOrder() async throws {
        let container = try await makeContainer()
        try await container.performBackgroundTask { context in
            for name in ["a", "b", "c", "d", "e"] {
                let item = Item(context: context)
                item.name = name
            }
            try context.save()
        }
        // Core Data honours a batch delete's fetch limit, offset and sort: the two last by name go.
        var fetch = FetchRequest<Item>(predicate: try FetchPredicate(format: "name != 'a'"),
                                       sortDescriptors: [FetchSortDescriptor(key: "name", ascending: false)])
        fetch.fetchLimit = 2
        var delete = BatchDeleteRequest(fetchRequest: fetch)
        delete.resultType = .objectIDs
        #expect(try await container.newBackgroundContext().execute(delete).count == 2)
        #expect(try await container.rawStrings("SELECT name FROM item ORDER BY name") == ["a", "b", "c"])
        // With an offset, counting in one statement.
        fetch.fetchLimit = 1
        fetch.fetchOffset = 1
        var counting = BatchDeleteRequest(fetchRequest: fetch)
        counting.resultType = .count
        #expect(try await container.newBackgroundContext().execute(counting).count == 1)
        #expect(try await container.rawStrings("SELECT name FROM item ORDER BY name") == ["a", "c"])
    }

    @Test func denyFailsTheWholeDeleteAndNothingGoes() async throws {
        let container = try await makeContainer()
        try await container.performBackgroundTask { context in
            let bears = Team(context: context)
            bears.name = "Bears"
            let player = Player(context: context)
            player.name = "Bob"
            player.team = bears
            let empty = Team(context: context)
            empty.name = "Empty"
            try context.save()
        }
        let context = container.newBackgroundContext()
        let error = await captureDataError { _ = try await context.execute(BatchDeleteRequest(fetchRequest: FetchRequest<Team>(entityName: "Team"))) }
        guard case .constraintViolation(let constraint, _, _)? = error else {
            Issue.record("expected a constraint violation, got \(String(describing: error))")
            return
        }
        #expect(error?.sqlState == "23503" && constraint?.entityName == "Player")
        #expect(try await container.rawIntegers("SELECT count(*) FROM team") == [2])
        var onlyEmpty = BatchDeleteRequest(fetchRequest: FetchRequest<Team>(predicate: try FetchPredicate(format: "players.@count == 0")))
        onlyEmpty.resultType = .count
        #expect(try await context.execute(onlyEmpty).count == 1)
        #expect(try await container.rawStrings("SELECT name FROM team") == ["Bears"])
    }

    @Test func nullifyClearsReferencesAndIDsDeleteExactly() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_delete")
        let container = PersistentContainer(name: "Delete", model: ManagedObjectModel(Sample.self, SampleGroup.self))
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        let (groupID, sampleIDs) = try await container.performBackgroundTask { context in
            let group = SampleGroup(context: context)
            group.name = "g"
            let samples = (0..<4).map { index -> Sample in
                let sample = Sample(context: context)
                sample.label = "s\(index)"
                sample.group = group
                return sample
            }
            try context.save()
            return (group.objectID, samples.map(\.objectID))
        }
        var delete = BatchDeleteRequest(objectIDs: [groupID])
        delete.resultType = .objectIDs
        let result = try await container.newBackgroundContext().execute(delete)
        #expect(Set(result.nullifiedObjectIDs) == Set(sampleIDs) && result.cascadedObjectIDs.isEmpty)
        #expect(try await container.rawIntegers("SELECT count(*) FROM sample WHERE group_id IS NULL") == [4])
        let some = try await container.newBackgroundContext().execute(BatchDeleteRequest(objectIDs: Array(sampleIDs.prefix(2))))
        #expect(some.objectIDs.isEmpty)                     // status only: no IDs read back
        #expect(try await container.rawStrings("SELECT label FROM sample ORDER BY label") == ["s2", "s3"])
        let mixed = await captureDataError { _ = try await container.newBackgroundContext().execute(BatchDeleteRequest(objectIDs: [groupID, sampleIDs[3]])) }
        #expect("\(mixed!)".contains("object IDs of one entity"))
    }
}
