import Foundation
import PostgresData
import PostgresDataTesting
import Testing

@Suite struct MergingTests {
    @Test func remoteChangesKnownOnlyAsIDsRefreshAndRemoveObjects() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        context.retainsRegisteredObjects = true  // read by ID in later blocks
        let (keptID, goneID) = try await context.perform {
            let kept = Item(context: context)
            kept.name = "kept"
            let gone = Item(context: context)
            gone.name = "gone"
            try context.save()
            return (kept.objectID, gone.objectID)
        }
        // Another process changes the rows behind the context's back.
        try await container.rawExecute("UPDATE item SET weight = 7 WHERE name = 'kept'; DELETE FROM item WHERE name = 'gone'")
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: [.updated: [keptID], .deleted: [goneID]], into: [context])
        try await context.perform {
            #expect(context.registeredObject(for: goneID) == nil)
            let kept = try #require(context.registeredObject(for: keptID) as? Item)
            #expect(kept.isFault)
            #expect(kept.weight == 7)
            // The refreshed version saves without a conflict.
            kept.weight = 8
            try context.save()
        }
        #expect(try await container.rawIntegers("SELECT weight FROM item") == [8])
    }

    @Test func refreshWithAndWithoutMergingChanges() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        context.retainsRegisteredObjects = true  // read by ID in later blocks
        let id = try await context.perform {
            let item = Item(context: context)
            item.name = "refresh me"
            try context.save()
            return item.objectID
        }
        try await container.rawExecute("UPDATE item SET weight = 9")
        try await context.perform {
            let item = try #require(context.registeredObject(for: id) as? Item)
            item.name = "local edit"
            context.refresh(item, mergeChanges: true)
            #expect(item.name == "local edit" && item.weight == 9 && item.hasChanges)
            context.refresh(item, mergeChanges: false)
            #expect(item.isFault && !context.hasChanges)
            #expect(item.name == "refresh me")
            item.done = true
            try context.save()
        }
        #expect(try await container.rawIntegers("SELECT weight FROM item WHERE done") == [9])
    }

    @Test func performAndWaitNestsAndRoundTripsDoNotGrowWithObjects() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        let coordinator = container.persistentStoreCoordinator
        let counts = try await context.perform { () throws -> [Int] in
            var counts: [Int] = []
            for size in [10, 1_000] {
                let before = coordinator.requestCount
                try context.performAndWait {
                    // Nested on the same queue: runs at once instead of deadlocking.
                    try context.performAndWait {
                        for index in 0..<size {
                            let item = Item(context: context)
                            item.name = "n\(index)"
                        }
                        try context.save()
                    }
                }
                counts.append(coordinator.requestCount - before)
            }
            // Updating every object: still a fixed number of requests.
            let items = try context.fetch(FetchRequest<Item>())
            for item in items { item.weight += 1 }
            let before = coordinator.requestCount
            try context.save()
            counts.append(coordinator.requestCount - before)
            return counts
        }
        #expect(counts[0] == counts[1])
        #expect(counts[2] == 1)
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE weight = 1") == [1_010])
    }

    @Test func childContextsMergeTheirParentsSavesAutomatically() async throws {
        let container = try await makeContainer()
        let parent = container.newBackgroundContext()
        parent.retainsRegisteredObjects = true  // read by ID in later blocks
        let id = try await parent.perform {
            let item = Item(context: parent)
            item.name = "before"
            try parent.save()
            return item.objectID
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        child.automaticallyMergesChangesFromParent = true
        child.retainsRegisteredObjects = true  // merges refresh only objects in use
        try await child.perform { _ = try child.existingObject(with: id) }
        let notifications = child.notifications()
        try await parent.perform {
            (parent.registeredObject(for: id) as? Item)?.name = "after"
            try parent.save()
        }
        try await Deadline.within(.seconds(60), "objects-did-change refreshing the saved object") {
            for await notification in notifications {
                if case .objectsDidChange(let changes) = notification, changes.refreshedObjectIDs.contains(id) { return }
            }
        }
        let name = await child.perform { (child.registeredObject(for: id) as? Item)?.name }
        #expect(name == "after")
    }
}
