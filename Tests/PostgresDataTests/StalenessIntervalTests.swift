import Foundation
import PostgresData
import PostgresDataTesting
import Testing

/// `stalenessInterval`: how old a row of the coordinator's row cache may be for a fault to
/// fill from it without asking the database.
@Suite struct StalenessIntervalTests {
    @Test func faultsFillFromCachedRowsOnlyWhileTheyAreFreshEnough() async throws {
        let container = try await makeContainer()
        let id = try await container.saveItem(named: "cached")
        let coordinator = container.persistentStoreCoordinator
        // A context holds the object: its row stays in the cache, at weight 0.
        let holder = container.newBackgroundContext()
        holder.retainsRegisteredObjects = true
        try await holder.perform { _ = try holder.existingObject(with: id) }
        // Another program changes the row; nothing tells this process.
        try await container.rawExecute("UPDATE item SET weight = 4")

        func weight(stalenessInterval: Double) async throws -> (weight: Int, queries: Int) {
            let context = container.newBackgroundContext()
            context.stalenessInterval = stalenessInterval
            return try await context.perform { () throws in
                let before = coordinator.requestCount
                let item = try #require(context.object(with: id) as? Item)
                return (item.weight, coordinator.requestCount - before)
            }
        }
        // Any age (the default, as in Core Data), or an hour: the cached row, no query.
        #expect(container.newBackgroundContext().stalenessInterval < 0)
        #expect(try await weight(stalenessInterval: -1) == (0, 0))
        #expect(try await weight(stalenessInterval: 3600) == (0, 0))
        // 0: never the cache. Its fresh row replaces the cached one for everybody.
        #expect(try await weight(stalenessInterval: 0) == (4, 1))
        #expect(try await weight(stalenessInterval: -1) == (4, 0))

        try await container.rawExecute("UPDATE item SET weight = 5")
        #expect(try await weight(stalenessInterval: 3600) == (4, 0))
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await weight(stalenessInterval: 0.25) == (5, 1))

        // A fault that holds a cache reference reads again too, and refreshes the row.
        try await container.rawExecute("UPDATE item SET weight = 6")
        try await holder.perform { () throws in
            holder.stalenessInterval = 0
            let item = try #require(holder.registeredObject(for: id) as? Item)
            holder.refresh(item, mergeChanges: false)
            #expect(item.weight == 6)
        }
        #expect(try await weight(stalenessInterval: -1) == (6, 0))
        await coordinator.close()
    }

    @Test func faultsOfAnAsynchronousFetchReadAgainOnceTheirOwnRowsAreTooOld() async throws {
        let container = try await makeContainer()
        _ = try await container.saveItem(named: "kept")
        let coordinator = container.persistentStoreCoordinator

        /// The weight a fault of an asynchronous fetch reads once another program changed its
        /// row (nothing tells this process) and 300 ms passed, and the queries it took.
        func weight(stalenessInterval: Double) async throws -> (weight: Int, queries: Int) {
            let context = container.newBackgroundContext()
            context.stalenessInterval = stalenessInterval
            var request = FetchRequest<Item>()
            request.fetchBatchSize = 100
            let asynchronous = AsynchronousFetchRequest(fetchRequest: request)
            let result = try await context.perform { () throws in try context.execute(asynchronous) }
            try await result.wait()
            try await container.rawExecute("UPDATE item SET weight = weight + 1")
            try await Task.sleep(for: .milliseconds(300))
            return try await context.perform { () throws in
                let item = try #require(result.finalResult?.first)
                #expect(item.isFault)
                let before = coordinator.requestCount
                return (item.weight, coordinator.requestCount - before)
            }
        }
        // Any age: the row the fault kept from its fetch, no query.
        #expect(try await weight(stalenessInterval: -1) == (0, 0))
        #expect(try await weight(stalenessInterval: 3600) == (1, 0))
        // Older than a quarter of a second: the database's row.
        #expect(try await weight(stalenessInterval: 0.25) == (3, 1))
        await coordinator.close()
    }
}
