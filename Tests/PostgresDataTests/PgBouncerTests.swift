import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import Testing

/// Behind PgBouncer in transaction pooling mode: consecutive transactions of one client
/// connection run on different server connections, so anything kept in a session between
/// transactions (prepared statements, `SET`, advisory locks, cursors outside a transaction)
/// would break or leak. Two server connections serve six client connections per container.
@Suite struct PgBouncerTests {
    @Test func theObjectGraphWorksBehindPgBouncerInTransactionMode() async throws {
        let server = try await TestDatabase.temporaryServer() ?? TemporaryPostgres.start()
        let bouncer = try TemporaryPgBouncer.start(for: server, poolMode: "transaction", serverConnections: 2)
        defer { bouncer.stop() }
        try await bouncer.reportingLog { try await exerciseTheObjectGraph(server: server, bouncer: bouncer) }
    }

    private func exerciseTheObjectGraph(server: TemporaryPostgres, bouncer: TemporaryPgBouncer) async throws {
        let name = "pd_bouncer_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try await Connection.connect(server.configuration)
        try await admin.execute(script: "CREATE DATABASE \(name)")
        var direct = server.configuration
        direct.database = name
        let pooled = bouncer.configuration(database: name)

        // LISTEN needs a session of its own: the listener connects directly.
        let options = PersistentStoreCoordinator.StoreOptions(
            createSchemaIfMissing: true, maximumConnections: 6, persistentHistoryTracking: true, listenerConfiguration: direct)
        let writer = PersistentContainer(name: "Writer", model: testModel)
        try await writer.loadPersistentStores(configuration: pooled, options: options)
        let reader = PersistentContainer(name: "Reader", model: testModel)
        try await reader.loadPersistentStores(configuration: pooled, options: options)
        defer {
            Task {
                await writer.persistentStoreCoordinator.close()
                await reader.persistentStoreCoordinator.close()
                await admin.close()
            }
        }
        let remote = StreamRecorder(reader.persistentStoreCoordinator.remoteChanges())

        // Six contexts at once: saves (a transaction each), fetches, faults, asynchronous
        // fetches through a cursor (inside its transaction), relationships.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<6 {
                group.addTask {
                    let context = writer.newBackgroundContext()
                    for round in 0..<5 {
                        try await context.perform {
                            let list = TodoList(context: context)
                            list.title = "w\(worker)r\(round)"
                            for index in 0..<20 {
                                let item = Item(context: context)
                                item.name = "w\(worker)r\(round)i\(index)"
                                item.list = list
                            }
                            try context.save()
                            let mine = try context.fetch(FetchRequest<Item>(predicate: try FetchPredicate(format: "list.title == %@", list.title)))
                            #expect(mine.count == 20)
                            #expect(mine.allSatisfy { $0.list === list })
                        }
                        let fetch = try await context.perform {
                            var request = FetchRequest<Item>(predicate: try FetchPredicate(format: "name BEGINSWITH %@", "w\(worker)r"),
                                                             sortDescriptors: [FetchSortDescriptor(key: "name")])
                            request.fetchBatchSize = 7
                            return try context.execute(AsynchronousFetchRequest(fetchRequest: request))
                        }
                        try await fetch.wait()
                        #expect(fetch.finalResult?.count == 20 * (round + 1))
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await writer.rawIntegers("SELECT count(*) FROM item") == [600])

        // Batch requests: an update, an upsert through a temporary staging table, a delete.
        let batches = writer.newBackgroundContext()
        var update = BatchUpdateRequest(entity: Item.self, predicate: try FetchPredicate(format: "name ENDSWITH 'i0'"))
        update.propertiesToUpdate = ["weight": 5]
        update.resultType = .updatedObjectsCount
        #expect(try await batches.execute(update).count == 30)
        var upsert = try BatchInsertRequest(entityName: "Product", objects: [["sku": "A", "price": 1], ["sku": "B", "price": 2]])
        upsert.onConflict = .update(conflictKeys: ["sku"])
        #expect(try await batches.execute(upsert).count == 2)
        upsert = try BatchInsertRequest(entityName: "Product", objects: [["sku": "A", "price": 3]])
        upsert.onConflict = .update(conflictKeys: ["sku"])
        #expect(try await batches.execute(upsert).count == 1)
        #expect(try await writer.rawIntegers("SELECT price::int8 FROM product ORDER BY sku") == [3, 2])
        var delete = BatchDeleteRequest(fetchRequest: FetchRequest<TodoList>(predicate: try FetchPredicate(format: "title BEGINSWITH 'w0'")))
        delete.resultType = .objectIDs
        #expect(try await batches.execute(delete).count == 5)
        #expect(try await writer.rawIntegers("SELECT count(*) FROM item") == [500])

        // The other container learns of all of it through history (read through PgBouncer)
        // after notifications on its direct LISTEN connection.
        _ = try await remote.first("the batch delete reaches the reader") { change in
            !change.objectIDNotification().deletedObjectIDs.isEmpty
        }
        let history = try await reader.newBackgroundContext().execute(PersistentHistoryChangeRequest.fetchHistory(after: nil))
        #expect(history.transactions.count == 30 + 4)

        // It really was transaction pooling, with at most two server connections.
        let console = try await Connection.connect(bouncer.configuration(database: "pgbouncer"))
        defer { Task { await console.close() } }
        let mode = try await console.execute(script: "SHOW CONFIG")[0]
            .first { try $0.decode(String.self, at: 0) == "pool_mode" }
        #expect(try mode?.decode(String.self, at: 1) == "transaction")
        let stats = try await console.execute(script: "SHOW STATS")[0]
            .first { try $0.decode(String.self, at: 0) == name }
        let transactions = try stats.map { Int(try $0.decode(String.self, at: 1)) ?? 0 } ?? 0
        #expect(transactions >= 30 + 4)
        let backends = try await admin.query("SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name NOT LIKE '%listener%'", name)
        #expect(try backends[0].decode(Int64.self, at: 0) <= 2)
    }

    /// A generation is one transaction held open, which transaction pooling keeps on one server
    /// connection; an asynchronous fetch imports its snapshot inside a transaction of its own.
    /// Statement pooling allows no transaction: pinning fails clearly at the first read.
    @Test func queryGenerationsWorkInTransactionModeAndFailClearlyInStatementMode() async throws {
        let server = try await TestDatabase.temporaryServer() ?? TemporaryPostgres.start()
        let name = "pd_bouncer_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try await Connection.connect(server.configuration)
        defer { Task { await admin.close() } }
        try await admin.execute(script: "CREATE DATABASE \(name)")
        for mode in ["transaction", "statement"] {
            let bouncer = try TemporaryPgBouncer.start(for: server, poolMode: mode, serverConnections: 3)
            defer { bouncer.stop() }
            try await bouncer.reportingLog { try await pinGenerations(mode: mode, server: server, bouncer: bouncer, database: name) }
        }
    }

    private func pinGenerations(mode: String, server: TemporaryPostgres, bouncer: TemporaryPgBouncer,
                                database name: String) async throws {
        let container = PersistentContainer(name: "Pinned", model: testModel)
        var direct = server.configuration
        direct.database = name
        if mode == "transaction" {
            try await container.loadPersistentStores(configuration: bouncer.configuration(database: name),
                                                     options: .init(createSchemaIfMissing: true, maximumConnections: 3))
            _ = try await container.performBackgroundTask { context in
                for index in 0..<30 {
                    let item = Item(context: context)
                    item.name = "item \(index)"
                }
                try context.save()
            }
        } else {
            try await container.loadPersistentStores(configuration: bouncer.configuration(database: name),
                                                     options: .init(maximumConnections: 3))
        }
        let context = container.newBackgroundContext()
        let pinned = await captureDataError {
            try await context.perform {
                try context.setQueryGenerationFrom(.current)
                #expect(try context.count(for: FetchRequest<Item>()) == 30)
            }
        }
        if mode == "statement" {
            guard case .invalidRequest(let reason)? = pinned else {
                Issue.record("expected invalidRequest in statement mode, got \(String(describing: pinned))")
                return
            }
            #expect(reason.contains("PgBouncer"))
            await container.persistentStoreCoordinator.close()
            return
        }
        #expect(pinned == nil)
        let directly = try await Connection.connect(direct)
        _ = try await directly.execute(script: "UPDATE item SET weight = 9; DELETE FROM item WHERE name = 'item 3'")
        await directly.close()
        let fetch = try await context.perform {
            var request = FetchRequest<Item>()
            request.fetchBatchSize = 7
            return try context.execute(AsynchronousFetchRequest(fetchRequest: request))
        }
        try await fetch.wait()
        #expect(fetch.operationError == nil)
        let weights = await context.perform { (fetch.finalResult ?? []).map(\.weight) }
        #expect(weights.count == 30 && weights.allSatisfy { $0 == 0 })
        try await context.perform {
            try context.setQueryGenerationFrom(nil)
            #expect(try context.count(for: FetchRequest<Item>()) == 29)
        }
        await container.persistentStoreCoordinator.close()
    }
}
