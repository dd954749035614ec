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
}
