import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import Testing

/// The seeds' scenarios, each against a real PostgreSQL.
@Suite struct ContextScenarioTests {
    @Test func backgroundImportOf10000ItemsIsMergedIntoTheViewContext() async throws {
        let container = try await makeContainer()
        let view = container.viewContext
        view.retainsRegisteredObjects = true  // read by ID in later blocks
        // The view context shows an item before the import; the import's save updates it.
        let watchedID = try await view.perform {
            let item = Item(context: view)
            item.name = "watched"
            try view.save()
            return item.objectID
        }
        let background = container.newBackgroundContext()
        let payload = try await background.perform {
            let watched = try #require(try background.existingObject(with: watchedID) as? Item)
            watched.weight = 42
            for index in 0..<10_000 {
                let item = Item(context: background)
                item.name = "Item \(index)"
                item.createdAt = Date(timeIntervalSince1970: Double(index))
            }
            let received = Locked<ContextDidSave?>(nil)
            let observer = NotificationCenter.default.addObserver(
                forName: ManagedObjectContext.didSaveObjectsNotification, object: background, queue: nil) { note in
                received.withLock { $0 = note.userInfo?["changes"] as? ContextDidSave }
            }
            try background.save()
            NotificationCenter.default.removeObserver(observer)
            return try #require(received.withLock { $0 })
        }
        #expect(payload.insertedObjectIDs.count == 10_000)
        #expect(payload.updatedObjectIDs == [watchedID])
        try await view.perform { () throws in
            let watched = view.registeredObject(for: watchedID) as? Item
            #expect(watched?.weight == 0)
            view.mergeChanges(fromContextDidSave: payload)
            #expect(watched?.weight == 42)
            #expect(try view.count(for: FetchRequest<Item>()) == 10_001)
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [10_001])
    }

    @Test func objectsDidChangeNamesEachChangedObjectOnceAndAgainOnceNotified() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        try await context.perform {
            let (first, second) = (Item(context: context), Item(context: context))
            first.name = "first"
            second.name = "second"
            try context.save()
            let received = Locked<[ContextObjectsDidChange]>([])
            let observer = NotificationCenter.default.addObserver(
                forName: ManagedObjectContext.objectsDidChangeNotification, object: context, queue: nil) { note in
                if let changes = note.userInfo?["changes"] as? ContextObjectsDidChange {
                    received.withLock { $0.append(changes) }
                }
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            func updatedSinceLastNotification() -> Set<ManagedObjectID> {
                context.processPendingChanges()
                return received.withLock { $0.last?.updatedObjectIDs ?? [] }
            }
            first.weight = 1
            first.weight = 2
            second.weight = 3
            #expect(updatedSinceLastNotification() == [first.objectID, second.objectID])
            first.weight = 4
            #expect(updatedSinceLastNotification() == [first.objectID])
            second.weight = 5
            context.rollback()
            second.weight = 6
            #expect(updatedSinceLastNotification() == [second.objectID])
            try context.save()
            first.weight = 7
            #expect(updatedSinceLastNotification() == [first.objectID])
        }
    }

    @Test func automaticallyMergesChangesFromSiblingSaves() async throws {
        let container = try await makeContainer()
        let view = container.viewContext
        view.automaticallyMergesChangesFromParent = true
        view.retainsRegisteredObjects = true  // merges refresh only objects in use
        let id = try await view.perform {
            let item = Item(context: view)
            item.name = "shared"
            try view.save()
            return item.objectID
        }
        let notifications = view.notifications()
        try await container.performBackgroundTask { context in
            let item = try #require(try context.existingObject(with: id) as? Item)
            item.name = "renamed"
            try context.save()
        }
        // The merge posts objects-did-change with the refreshed object.
        try await Deadline.within(.seconds(60), "objects-did-change refreshing the saved object") {
            for await notification in notifications {
                if case .objectsDidChange(let changes) = notification, changes.refreshedObjectIDs.contains(id) { return }
            }
        }
        let name = await view.perform { (view.registeredObject(for: id) as? Item)?.name }
        #expect(name == "renamed")
    }

    @Test func aPlayerIsRelatedToATeamOfAnotherContextByIDNotByObject() async throws {
        let container = try await makeContainer()
        let main = container.newBackgroundContext()
        main.name = "main"
        let teamID = try await main.perform {
            let team = Team(context: main)
            team.name = "Lions"
            try main.save()
            return team.objectID
        }
        let worker = container.newBackgroundContext()
        worker.name = "worker"
        // By ID: works.
        try await worker.perform {
            let team = try #require(worker.object(with: teamID) as? Team)
            #expect(team.isFault)
            let player = Player(context: worker)
            player.name = "Ann"
            player.team = team
            try worker.save()
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM player WHERE team_id = \(teamID.primaryKey!)") == [1])
        // By object: a clear error naming both contexts, and nothing changes.
        try await main.perform {
            let team = main.object(with: teamID)
            try worker.performAndWait {
                let player = Player(context: worker)
                player.name = "Bob"
                do {
                    try player.setValue(team, forKey: "team")
                    Issue.record("relating objects of two contexts must throw")
                } catch let error as PostgresDataError {
                    guard case .crossContextRelationship(let key, _, let objectContext, _, let otherContext) = error else {
                        Issue.record("unexpected \(error)")
                        return
                    }
                    #expect(key == "team" && objectContext.contains("worker") && otherContext.contains("main"))
                    #expect(error.description.contains("object(with:)"))
                }
                #expect(player.team == nil)
                // The typed setter cannot throw: the next save does.
                player.team = team as? Team
                #expect(player.team == nil)
                #expect(throws: PostgresDataError.self) { try worker.save() }
                worker.rollback()
            }
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM player") == [1])
    }

    @Test func objectIDsFetchedInTheBackgroundAreMaterialisedInTheViewContext() async throws {
        let container = try await makeContainer()
        let ids = try await container.performBackgroundTask { context in
            for index in 0..<20 {
                let item = Item(context: context)
                item.name = "n\(index)"
            }
            try context.save()
            context.reset()
            return try context.fetch(FetchRequest<ManagedObjectID>(entityName: "Item"))
        }
        #expect(ids.count == 20)
        let view = container.viewContext
        let coordinator = container.persistentStoreCoordinator
        let names = await view.perform {
            let objects = ids.map { view.object(with: $0) as! Item }
            #expect(objects.allSatisfy { $0.isFault })
            let before = coordinator.requestCount
            let names = objects.prefix(3).map(\.name)
            // Three faults, three queries; the rest stay faults.
            #expect(coordinator.requestCount == before + 3)
            #expect(objects.dropFirst(3).allSatisfy { $0.isFault })
            return names
        }
        #expect(names == ["n0", "n1", "n2"])
    }

    @Test func faultsFillLazilyFromTheRowCacheOrOneQuery() async throws {
        let container = try await makeContainer()
        let coordinator = container.persistentStoreCoordinator
        let (listID, itemIDs) = try await container.performBackgroundTask { context in
            let list = TodoList(context: context)
            list.title = "L"
            let items = (0..<3).map { index -> Item in
                let item = Item(context: context)
                item.name = "i\(index)"
                item.list = list
                return item
            }
            try context.save()
            return (list.objectID, items.map(\.objectID))
        }
        // A context that fetched the list keeps its row in the coordinator's row cache.
        let holder = container.newBackgroundContext()
        holder.retainsRegisteredObjects = true  // read by ID in later blocks
        try await holder.perform { _ = try holder.fetch(FetchRequest<TodoList>()) }
        let context = container.newBackgroundContext()
        try await context.perform { () throws in
            let start = coordinator.requestCount
            let list = context.object(with: listID) as! TodoList
            #expect(list.isFault && coordinator.requestCount == start)
            // Another context holds the row: filled from the row cache, no query.
            #expect(list.title == "L")
            #expect(coordinator.requestCount == start)
            // The to-many relationship is a fault of its own: one query for all IDs.
            let items = list.items
            #expect(coordinator.requestCount == start + 1)
            #expect(Set(items.map(\.objectID)) == Set(itemIDs))
            context.reset()
            #expect(throws: PostgresDataError.self) {
                _ = try context.existingObject(with: container.persistentStoreCoordinator.managedObjectID(
                    forURIRepresentation: URL(string: "x-postgresdata://Item/p999999")!)!)
            }
        }
        _ = holder
    }

    @Test func objectsFetchedWithValuesKeepTheirRowsToThemselves() async throws {
        let container = try await makeContainer()
        let coordinator = container.persistentStoreCoordinator
        let itemID = try await container.performBackgroundTask { context in
            let item = Item(context: context)
            item.name = "kept"
            try context.save()
            return item.objectID
        }
        let holder = container.newBackgroundContext()
        holder.retainsRegisteredObjects = true  // read by ID in later blocks
        try await holder.perform { () throws in
            var request = FetchRequest<Item>()
            request.returnsObjectsAsFaults = false
            let items = try holder.fetch(request)
            #expect(items.count == 1 && !items[0].isFault && items[0].name == "kept")
        }
        // No row-cache entry: another context's fault reads the row from the database.
        let context = container.newBackgroundContext()
        try await context.perform { () throws in
            let start = coordinator.requestCount
            let item = context.object(with: itemID) as! Item
            #expect(item.name == "kept")
            #expect(coordinator.requestCount == start + 1)
        }
        _ = holder
    }

    @Test func objectsMadeOutsideAContextGetTheirOwnIDsWhenInserted() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        try await context.perform { () throws in
            let entity = Item.entity()
            let first = Item(entity: entity, insertInto: nil)
            let second = Item(entity: entity, insertInto: nil)
            first.name = "first"
            second.name = "second"
            context.insert(first)
            context.insert(second)
            #expect(first.objectID != second.objectID && first.objectID.isTemporaryID && second.objectID.isTemporaryID)
            #expect(context.insertedObjects.count == 2)
            try context.save()
            #expect(first.objectID.primaryKey != nil && second.objectID.primaryKey != nil)
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [2])
    }

    @Test func childContextEditsGoIntoTheParentThenTheStore() async throws {
        let container = try await makeContainer()
        let parent = container.newBackgroundContext()
        let id = try await parent.perform {
            let item = Item(context: parent)
            item.name = "draft"
            try parent.save()
            return item.objectID
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        let newID = try await child.perform {
            let item = try #require(try child.existingObject(with: id) as? Item)
            item.name = "edited in child"
            let extra = Item(context: child)
            extra.name = "added in child"
            try child.save()
            #expect(!child.hasChanges)
            return extra.objectID
        }
        // Not in the database yet.
        #expect(try await container.rawStrings("SELECT name FROM item ORDER BY id") == ["draft"])
        try await parent.perform {
            #expect(parent.hasChanges)
            #expect((parent.registeredObject(for: id) as? Item)?.name == "edited in child")
            #expect((parent.registeredObject(for: newID) as? Item)?.name == "added in child")
            try parent.save()
        }
        #expect(try await container.rawStrings("SELECT name FROM item ORDER BY id") == ["edited in child", "added in child"])
    }
}
