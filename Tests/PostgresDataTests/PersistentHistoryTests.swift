import Foundation
import PostgresClient
@testable import PostgresData
import PostgresDataTesting
import Testing

/// Persistent history: what saves and batch requests record, tokens that miss nothing,
/// deletion, and other containers (other coordinators, as other processes are) merging it.
@Suite struct PersistentHistoryTests {
    static let tracking = PersistentStoreCoordinator.StoreOptions(createSchemaIfMissing: true, persistentHistoryTracking: true)

    /// Two containers on one fresh database, both tracking history.
    func twoContainers(mergeRemote: Bool = true) async throws -> (PersistentContainer, PersistentContainer) {
        let configuration = try await TestDatabase.fresh(prefix: "pd_history")
        var options = Self.tracking
        options.remoteChangeNotifications = mergeRemote
        let first = PersistentContainer(name: "A", model: testModel)
        try await first.loadPersistentStores(configuration: configuration, options: options)
        let second = PersistentContainer(name: "B", model: testModel)
        try await second.loadPersistentStores(configuration: configuration, options: options)
        return (first, second)
    }

    @Test func savesRecordWhoChangedWhatInOneTransactionEach() async throws {
        let (container, _) = try await twoContainers(mergeRemote: false)
        let context = container.newBackgroundContext()
        context.name = "editor"
        context.transactionAuthor = "alice"
        let (first, second) = try await context.perform {
            let list = TodoList(context: context)
            list.title = "groceries"
            let milk = Item(context: context)
            milk.name = "milk"
            milk.list = list
            let bread = Item(context: context)
            bread.name = "bread"
            try context.save()
            milk.done = true
            milk.weight = 2
            context.delete(bread)
            try context.save()
            return (milk.objectID, bread.objectID)
        }
        let result = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil))
        #expect(result.transactions.count == 2)
        let (inserted, changed) = (result.transactions[0], result.transactions[1])
        #expect(inserted.author == "alice" && inserted.contextName == "editor")
        #expect(Set(inserted.changes.map(\.changedObjectID)).count == 3)
        #expect(inserted.changes.allSatisfy { $0.changeType == .insert && $0.updatedProperties == nil })
        #expect(changed.changes.count == 2)
        let update = changed.changes.first { $0.changeType == .update }
        #expect(update?.changedObjectID == first)
        #expect(update?.updatedProperties == ["done", "weight"])
        #expect(changed.changes.first { $0.changeType == .delete }?.changedObjectID == second)
        #expect(changed.storeInstanceID == container.persistentStoreCoordinator.instanceID)
        #expect(changed.transactionNumber > inserted.transactionNumber)
        #expect(inserted.timestamp <= changed.timestamp)
        // One history row per entity and kind of change, keys in an array.
        #expect(try await container.rawIntegers("SELECT count(*) FROM postgres_data_history_change") == [4])
    }

    /// A fetch the server fails — a token it cannot read — on a connection of its own, as the
    /// remote-change listener's: the error carries the server's SQLSTATE, and the connection
    /// is left outside any transaction (the one-round-trip fetch rolled its back), so the
    /// next fetch on it runs.
    /// Objects updated in one save are recorded with the properties each changed: one history
    /// row per entity and set of changed properties.
    @Test func eachUpdatedObjectIsRecordedWithThePropertiesItChanged() async throws {
        let (container, _) = try await twoContainers(mergeRemote: false)
        let context = container.newBackgroundContext()
        let ids = try await context.perform {
            let list = TodoList(context: context)
            list.title = "chores"
            let items = (0..<4).map { index in
                let item = Item(context: context)
                item.name = "item \(index)"
                return item
            }
            try context.save()
            items[0].weight = 5
            items[1].name = "renamed"
            items[1].done = true
            items[2].done = true
            items[2].name = "also renamed"
            items[3].list = list
            list.title = "errands"
            try context.save()
            return (items.map(\.objectID), list.objectID)
        }
        let result = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil))
        #expect(result.transactions.count == 2)
        let updates = result.transactions.last?.changes.filter { $0.changeType == .update } ?? []
        func properties(of id: ManagedObjectID) -> Set<String>? { updates.first { $0.changedObjectID == id }?.updatedProperties }
        #expect(updates.count == 5)
        #expect(properties(of: ids.0[0]) == ["weight"])
        #expect(properties(of: ids.0[1]) == ["done", "name"] && properties(of: ids.0[2]) == ["done", "name"])
        #expect(properties(of: ids.0[3]) == ["list"])
        #expect(properties(of: ids.1)?.contains("title") == true)
        // Items: weight; done and name (two objects); list. The list: one more.
        let rows = try await container.rawIntegers("""
            SELECT count(*) FROM postgres_data_history_change
            WHERE change_type = 1 AND transaction_id = (SELECT max(transaction_id) FROM postgres_data_history_change)
            """)
        #expect(rows == [4])
    }

    @Test func aFetchTheServerFailsLeavesItsConnectionReadyForTheNext() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_history")
        let container = PersistentContainer(name: "A", model: testModel)
        var options = Self.tracking
        options.remoteChangeNotifications = false
        try await container.loadPersistentStores(configuration: configuration, options: options)
        _ = try await container.saveItem(named: "a")
        let connection = try await Connection.connect(configuration)
        // Well formed for a token, but its xmin passes its xmax: pg_snapshot refuses it.
        let unreadable = try #require(PersistentHistoryToken("10:5:"))
        let failing = HistoryFetch(request: .fetchHistory(after: unreadable), model: testModel, excluding: nil)
        await #expect { _ = try await failing.run(on: connection) } throws: { error in
            (error as? PostgresError)?.sqlState?.rawValue == "22P02"
        }
        #expect(await connection.transactionStatus == .idle)
        let all = try await HistoryFetch(request: .fetchHistory(after: nil), model: testModel, excluding: nil).run(on: connection)
        #expect(all.transactions.count == 1)
        await connection.close()
        await container.persistentStoreCoordinator.close()
    }

    @Test func aTokenReturnsOnlyWhatFollowsItAndNothingTwice() async throws {
        let (container, _) = try await twoContainers(mergeRemote: false)
        let context = container.newBackgroundContext()
        for name in ["a", "b", "c"] { _ = try await container.saveItem(named: name) }
        let all = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil))
        #expect(all.transactions.count == 3)
        let afterFirst = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: all.transactions[0]))
        #expect(afterFirst.transactions.map(\.transactionNumber) == all.transactions.dropFirst().map(\.transactionNumber))
        let allToken = try #require(all.token)
        let nothing = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: allToken))
        #expect(nothing.transactions.isEmpty)

        var limited = PersistentHistoryChangeRequest.fetchHistory(after: nil)
        limited.fetchLimit = 2
        let page = try await context.execute(limited)
        #expect(page.transactions.count == 2)
        let pageToken = try #require(page.token)
        let rest = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: pageToken))
        #expect(rest.transactions.map(\.transactionNumber) == [all.transactions[2].transactionNumber])

        let count = try await context.execute({
            var request = PersistentHistoryChangeRequest.fetchHistory(after: all.transactions[0].token)
            request.resultType = .count
            return request
        }())
        #expect(count.count == 2)
    }

    /// A transaction that wrote history before another but commits after it is not skipped
    /// by a reader that saw the other one: the token is a snapshot, not a number.
    @Test func aTransactionThatCommitsLateIsNotMissed() async throws {
        let (container, _) = try await twoContainers(mergeRemote: false)
        let context = container.newBackgroundContext()
        let late = try await Connection.connect(container.persistentStoreCoordinator.connectionPool.configuration)
        try await late.execute(script: "BEGIN")
        try await late.query("INSERT INTO postgres_data_history_transaction (author, origin) VALUES ('late', gen_random_uuid())")
        _ = try await container.saveItem(named: "early")
        let first = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil))
        #expect(first.transactions.map(\.author) == [nil])
        try await late.execute(script: "COMMIT")
        await late.close()
        let firstToken = try #require(first.token)
        let second = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: firstToken))
        #expect(second.transactions.map(\.author) == ["late"])
        // The late one's number is lower than the one seen first: a numeric position would skip it.
        #expect(second.transactions[0].transactionNumber < first.transactions[0].transactionNumber)
    }

    @Test func batchRequestsRecordTheirRows() async throws {
        let (container, _) = try await twoContainers(mergeRemote: false)
        let context = container.newBackgroundContext()
        context.transactionAuthor = "batch"
        var rows: [[String: (any Sendable)?]] = []
        for index in 0..<5 { rows.append(["name": "item \(index)", "weight": index]) }
        let inserted = try await context.execute(try BatchInsertRequest(entityName: "Item", objects: rows))
        #expect(inserted.count == 5)
        let updated = try await context.execute(BatchUpdateRequest(entity: Item.self, predicate: try FetchPredicate(format: "weight >= 3"),
                                                                   propertiesToUpdate: ["done": true]))
        #expect(updated.count == 2)
        let deleted = try await context.execute(BatchDeleteRequest(fetchRequest: FetchRequest<Item>(predicate: try FetchPredicate(format: "weight == 0"))))
        #expect(deleted.count == 1)
        let nothing = try await context.execute(BatchUpdateRequest(entity: Item.self, predicate: try FetchPredicate(format: "weight > 100"),
                                                                   propertiesToUpdate: ["done": false]))
        #expect(nothing.count == 0)

        let history = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions
        #expect(history.allSatisfy { $0.author == "batch" })
        let kinds = history.map { Set($0.changes.map(\.changeType)) }
        #expect(kinds == [[.insert], [.update], [.delete], []])
        #expect(history[0].changes.count == 5 && history[1].changes.count == 2 && history[2].changes.count == 1)
        #expect(history[1].changes.allSatisfy { $0.updatedProperties == ["done"] })
        let weights = try await container.rawIntegers("SELECT weight FROM item WHERE done ORDER BY weight")
        let updatedKeys = Set(history[1].changes.compactMap(\.changedObjectID.primaryKey))
        #expect(Set(try await container.rawIntegers("SELECT id FROM item WHERE done")) == updatedKeys)
        #expect(weights == [3, 4])
    }

    @Test func anUpsertRecordsAndMergesTheRowsItUpdatedAsUpdates() async throws {
        let (container, _) = try await twoContainers(mergeRemote: false)
        let context = container.newBackgroundContext()
        _ = try await context.execute(try BatchInsertRequest(entityName: "Product", objects: [["sku": "A", "price": 1]]))
        let watcher = container.newBackgroundContext()
        let priceOfA = try await watcher.perform {
            let product = try #require(try watcher.fetch(FetchRequest<Product>()).first)
            return (product.objectID, product.price)
        }
        #expect(priceOfA.1 == 1)

        var upsert = try BatchInsertRequest(entityName: "Product", objects: [["sku": "A", "price": 5], ["sku": "B", "price": 2]])
        upsert.onConflict = .update(conflictKeys: ["sku"])
        upsert.contextsToMerge = [watcher]
        #expect(try await context.execute(upsert).count == 2)
        let history = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions
        #expect(history.count == 2)
        let changes = history[1].changes
        #expect(changes.filter { $0.changeType == .update }.map(\.changedObjectID) == [priceOfA.0])
        #expect(changes.first { $0.changeType == .update }?.updatedProperties == ["price"])
        #expect(changes.filter { $0.changeType == .insert }.count == 1)
        // The merged context refreshed A (an update), it did not take it for a new object.
        #expect(await watcher.perform { (watcher.object(with: priceOfA.0) as! Product).price } == 5)
    }

    @Test func historyBeforeATokenOrADateIsDeleted() async throws {
        let (container, _) = try await twoContainers(mergeRemote: false)
        let context = container.newBackgroundContext()
        for name in ["a", "b", "c"] { _ = try await container.saveItem(named: name) }
        let all = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions
        let deleted = try await context.execute(PersistentHistoryChangeRequest.deleteHistory(before: all[1].token))
        #expect(deleted.count == 2)
        let left = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions
        #expect(left.map(\.transactionNumber) == [all[2].transactionNumber])
        #expect(try await container.rawIntegers("SELECT count(*) FROM postgres_data_history_change") == [1])
        let none = try await context.execute(PersistentHistoryChangeRequest.deleteHistory(before: Date().addingTimeInterval(60)))
        #expect(none.count == 1)
        #expect(try await container.rawIntegers("SELECT count(*) FROM postgres_data_history_transaction") == [0])
    }

    @Test func withoutTrackingAHistoryRequestSaysHowToTurnItOn() async throws {
        let container = try await makeContainer()
        let error = await captureDataError {
            _ = try await container.viewContext.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil))
        }
        #expect(error.map { "\($0)" }?.contains("persistentHistoryTracking: true") == true)
        #expect(try await container.rawIntegers("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'postgres_data_history%'") == [0])
    }

    @Test func tokensRoundTripAsTextAndJSON() throws {
        let token = try #require(PersistentHistoryToken("752:760:753,758+759-754"))
        #expect(token.description == "752:760:753,758+759-754")
        let data = try JSONEncoder().encode(token)
        #expect(try JSONDecoder().decode(PersistentHistoryToken.self, from: data) == token)
        for bad in ["", "752", "752:760", "a:b:", "752:760:+", "752:760:-x", "1:2:3;DROP TABLE item"] {
            #expect(PersistentHistoryToken(bad) == nil, "\(bad)")
        }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(PersistentHistoryToken.self, from: Data("\"nope\"".utf8)) }
    }

    // MARK: Another coordinator's saves

    @Test func anotherCoordinatorsSavesAreMergedIntoContextsThatMergeAutomatically() async throws {
        let (writer, reader) = try await twoContainers()
        let remote = StreamRecorder(reader.persistentStoreCoordinator.remoteChanges())
        let own = StreamRecorder(writer.persistentStoreCoordinator.remoteChanges())
        let milk = try await writer.saveItem(named: "milk")
        let bread = try await writer.saveItem(named: "bread")
        _ = try await remote.first("the two inserts") { $0.objectIDNotification().insertedObjectIDs.contains(bread) }
        let view = reader.newBackgroundContext()
        view.retainsRegisteredObjects = true  // read by ID in later blocks
        view.automaticallyMergesChangesFromParent = true
        let changes = StreamRecorder(view.notifications())
        let names = try await view.perform { try view.fetch(FetchRequest<Item>()).map(\.name).sorted() }
        #expect(names == ["bread", "milk"])

        try await writer.performBackgroundTask { context in
            (try context.existingObject(with: milk) as! Item).name = "oat milk"
            context.delete(try context.existingObject(with: bread))
            Item(context: context).name = "eggs"
            try context.save()
        }
        let merged = try await changes.first("the merge into the view") {
            if case .objectsDidChange(let change) = $0 { !change.refreshedObjectIDs.isEmpty } else { false }
        }
        guard case .objectsDidChange(let change) = merged else { return }
        #expect(change.refreshedObjectIDs == [milk])
        #expect(change.deletedObjectIDs == [bread])
        #expect(change.insertedObjectIDs.count == 1)
        let now = try await view.perform { () throws -> (String, Bool, Int) in
            let object = try view.existingObject(with: milk) as! Item
            return (object.name, view.registeredObject(for: bread) == nil, try view.count(for: FetchRequest<Item>()))
        }
        #expect(now.0 == "oat milk" && now.1 && now.2 == 2)

        let last = try await remote.first("the update") { $0.objectIDNotification().updatedObjectIDs == [milk] }
        #expect(last.transactions.count == 1)
        #expect(last.objectIDNotification().deletedObjectIDs == [bread])
        // The listener may have read again since (finding nothing new), which moves its token
        // on: it is at or past the last change it posted, never behind.
        func xmax(_ token: PersistentHistoryToken?) -> UInt64 {
            token.flatMap { UInt64($0.description.split(separator: ":")[1]) } ?? 0
        }
        #expect(xmax(reader.persistentStoreCoordinator.lastRemoteChangeToken) >= xmax(last.token))
        // The writer's own listener never handed its own saves back (the reader's saw all three).
        await writer.persistentStoreCoordinator.close()
        #expect(own.recorded.isEmpty)
        await reader.persistentStoreCoordinator.close()
    }

    @Test func aListenerThatLostItsConnectionCatchesUpFromHistory() async throws {
        let (writer, reader) = try await twoContainers()
        let remote = StreamRecorder(reader.persistentStoreCoordinator.remoteChanges())
        let admin = try await Connection.connect(reader.persistentStoreCoordinator.connectionPool.configuration)
        let listeners = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE '%remote-change listener'"
        #expect(try await admin.query(listeners)[0].decode(Int64.self, at: 0) == 2)
        try await admin.query("""
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND application_name LIKE '%remote-change listener'
            """)
        let saved = try await writer.saveItem(named: "while the listener was away")
        let change = try await remote.first("the save, after reconnecting") { $0.objectIDNotification().insertedObjectIDs == [saved] }
        #expect(change.transactions.count == 1)
        try await Deadline.poll("both listeners back") { try await admin.query(listeners)[0].decode(Int64.self, at: 0) == 2 }
        await admin.close()
        await writer.persistentStoreCoordinator.close()
        await reader.persistentStoreCoordinator.close()
    }
}
