import Foundation
@testable import PostgresData
import PostgresDataTesting
import Testing

/// `propertiesToFetch` on an object fetch: partially filled objects, as in Core Data. The
/// properties fetched read without a query; the first access to another loads the whole
/// row; a partial row never enters the row cache nor reaches the database as values.
@Suite struct PartialFetchTests {
    private static func seeded() async throws -> PersistentContainer {
        let container = try await makeContainer()
        try await container.performBackgroundTask { context in
            let list = TodoList(context: context)
            list.title = "L"
            for (index, name) in ["a", "b", "c"].enumerated() {
                let item = Item(context: context)
                item.name = name
                item.weight = 10 + index
                item.notes = "note \(name)"
                item.list = list
            }
            try context.save()
        }
        return container
    }

    @Test func fetchedPropertiesReadWithoutAQueryAndTheRestLoadsOnFirstAccess() async throws {
        let container = try await Self.seeded()
        let coordinator = container.persistentStoreCoordinator
        let context = container.newBackgroundContext()
        try await context.perform { () throws in
            var request = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])
            request.propertiesToFetch = ["name"]
            let items = try context.fetch(request)
            #expect(coordinator.cachedRowCount == 0, "partial rows stay out of the row cache")
            let before = coordinator.requestCount
            #expect(items.map(\.name) == ["a", "b", "c"])
            #expect(coordinator.requestCount == before)
            // Another property: the whole row, once.
            #expect(items[0].weight == 10 && items[0].notes == "note a")
            #expect(coordinator.requestCount == before + 1)
            #expect(items[0].list?.title == "L")
            #expect(items[0].weight == 10 && coordinator.requestCount == before + 2, "one more query, for the list")
            // An object already whole stays whole when fetched partly again.
            _ = try context.fetch(request)
            #expect(items[0].notes == "note a" && coordinator.requestCount == before + 3)
        }
        await coordinator.close()
    }

    @Test func writingOrDeletingAPartialObjectLoadsItFirstAndSavesOnlyTheChange() async throws {
        let container = try await Self.seeded()
        let context = container.newBackgroundContext()
        try await context.perform {
            var request = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])
            request.propertiesToFetch = ["weight"]
            let items = try context.fetch(request)
            items[0].weight = 99
            #expect(items[0].name == "a" && items[0].notes == "note a")
            context.delete(items[1])
            try context.save()
        }
        #expect(try await container.rawStrings("SELECT name || ' ' || weight || ' ' || notes || ' ' || (list_id IS NOT NULL) FROM item ORDER BY name")
                == ["a 99 note a true", "c 12 note c true"])
        await container.persistentStoreCoordinator.close()
    }

    @Test func aRowGoneBeforeTheRestLoadsReadsAsDeletedAndBadPropertiesAreRefused() async throws {
        let container = try await Self.seeded()
        let context = container.newBackgroundContext()
        context.retainsRegisteredObjects = true
        var request = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])
        request.propertiesToFetch = ["name"]
        let partial = request
        let ids = try await context.perform { try context.fetch(partial).map(\.objectID) }
        try await container.rawExecute("DELETE FROM item WHERE name = 'c'")
        try await context.perform { () throws in
            let gone = try #require(context.registeredObject(for: ids[2]) as? Item)
            #expect(gone.name == "c")
            #expect(gone.weight == 0 && gone.isDeleted, "gone: it reads as deleted, with default values")

            var wrong = partial
            wrong.propertiesToFetch = [.expression(.sum("weight", as: "total"))]
            #expect(throws: PostgresDataError.self) { try context.fetch(wrong) }
            wrong.propertiesToFetch = ["nonsense"]
            #expect(throws: PostgresDataError.self) { try context.fetch(wrong) }
        }
        await container.persistentStoreCoordinator.close()
    }

    @Test func theSelectListReadsMissingColumnsAsTypedNulls() throws {
        let entity = try #require(testModel.entitiesByName["Item"])
        let missing = try #require(try ManagedObjectContext.missingProperties(of: entity, fetching: ["name", "list"], sortedBy: ["done"]))
        let list = PersistentStoreCoordinator.selectList(entity, missing: missing)
        #expect(list.hasPrefix("t.\"id\", t.xmin, t.\"name\""))
        #expect(list.contains("t.\"list_id\"") && list.contains("t.\"done\"") && !list.contains("THEN t.\"done\""))
        #expect(list.contains("CASE WHEN false THEN t.\"weight\" END"))
        #expect(try ManagedObjectContext.missingProperties(of: entity, fetching: nil) == nil)
    }
}
