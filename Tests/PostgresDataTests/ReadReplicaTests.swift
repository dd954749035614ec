import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import Testing

/// Read replicas: a streaming standby started by the harness (`pg_basebackup` of a primary of
/// the suite's own). Replay is paused to hold the replica behind, so where each read went is
/// seen in what it returns.
@Suite(.serialized) struct ReadReplicaTests {
    /// One primary and one hot standby for the suite (each test has databases of its own).
    static let servers: Result<(TemporaryPostgres, TemporaryPostgres), any Error> = Result {
        let primary = try TemporaryPostgres.start()
        return (primary, try primary.startStandby())
    }

    /// A fresh database on the primary, once the standby has it too, and a container reading
    /// from the standby.
    func stage(consistency: ReplicaConsistency = .ownWrites) async throws -> Stage {
        let (primary, standby) = try Self.servers.get()
        let name = "pd_replica_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try await Connection.connect(primary.configuration)
        try await admin.execute(script: "CREATE DATABASE \(name)")
        await admin.close()
        var database = primary.configuration
        database.database = name
        var replica = standby.configuration
        replica.database = name
        var connected: Connection?
        try await Deadline.poll("the standby replays CREATE DATABASE \(name)") {
            connected = try? await Connection.connect(replica)
            return connected != nil
        }
        let replicaAdmin = try #require(connected)
        let container = PersistentContainer(name: "Replicated", model: testModel)
        // The schema is created on the primary; the replica must have replayed it before reading.
        try await container.loadPersistentStores(configuration: database, options: .init(
            createSchemaIfMissing: true, readReplicaConfiguration: replica))
        let stage = Stage(container: container, primary: database, replicaAdmin: replicaAdmin)
        try await stage.waitForReplay()
        return stage
    }

    struct Stage {
        let container: PersistentContainer
        let primary: Configuration
        let replicaAdmin: Connection

        var coordinator: PersistentStoreCoordinator { container.persistentStoreCoordinator }

        /// Waits until the standby has replayed everything the primary has written so far.
        func waitForReplay() async throws {
            let admin = try await Connection.connect(primary)
            let target = try await admin.query("SELECT pg_current_wal_insert_lsn()::text")[0].decode(String.self, at: 0)
            await admin.close()
            try await Deadline.poll("the standby replays up to \(target)") {
                (try? await replicaAdmin.query("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", target)[0].decode(Bool.self, at: 0)) == true
            }
        }

        /// Holds the standby where it is: nothing written from now on reaches it until `resume()`.
        func pause() async throws {
            try await waitForReplay()
            _ = try await replicaAdmin.query("SELECT pg_wal_replay_pause()")
            try await Deadline.poll("replay pauses") {
                (try? await replicaAdmin.query("SELECT pg_get_wal_replay_pause_state()")[0].decode(String.self, at: 0)) == "paused"
            }
        }

        func resume() async throws {
            _ = try await replicaAdmin.query("SELECT pg_wal_replay_resume()")
        }

        func itemNames(in context: ManagedObjectContext, allowingReplica: Bool = false) async throws -> [String] {
            try await context.perform {
                var request = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])
                request.allowsReadingFromReplica = allowingReplica
                return try context.fetch(request).map(\.name)
            }
        }

        func close() async {
            try? await resume()
            await container.persistentStoreCoordinator.close()
            await replicaAdmin.close()
        }
    }

    @Test func readOnlyContextsReadTheReplicaAndCannotSave() async throws {
        let stage = try await stage()
        defer { Task { await stage.close() } }
        for name in ["apple", "bread"] { _ = try await stage.container.saveItem(named: name) }
        try await stage.pause()
        // Written behind the coordinator's back, so that its row cache cannot know the row.
        let key = try #require(try await stage.container.rawIntegers("INSERT INTO \"item\" (name, created_at, done, weight) VALUES ('cheese', now(), false, 0) RETURNING id").first)
        let cheese = try #require(stage.coordinator.managedObjectID(forURIRepresentation: URL(string: "x-postgresdata://Item/p\(key)")!))

        let writer = stage.container.newBackgroundContext()
        let reader = stage.container.newReadOnlyContext()
        #expect(reader.isReadOnly && !writer.isReadOnly)
        // A fault of the read-only context reads the replica, where the row is not yet (the
        // row cache, which holds the primary's rows, does not have it either).
        let missing = await reader.perform { () -> Bool in
            (try? reader.existingObject(with: cheese)) == nil
        }
        #expect(missing)
        #expect(try await stage.itemNames(in: writer) == ["apple", "bread", "cheese"])
        #expect(try await stage.itemNames(in: reader) == ["apple", "bread"])
        let counted = try await reader.perform { try reader.count(for: FetchRequest<Item>()) }
        #expect(counted == 2)

        // An asynchronous fetch of the read-only context runs its cursor there too.
        let asynchronous = try await reader.perform {
            try reader.execute(AsynchronousFetchRequest(fetchRequest: FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])))
        }
        try await asynchronous.wait()
        #expect(asynchronous.finalResult?.count == 2)

        let statistics = try #require(stage.coordinator.replicaStatistics)
        #expect(statistics.readsOnReplica >= 4)
        #expect(statistics.readsOnPrimaryReplicaUnavailable == 0)

        // Saving is refused with a clear error; the context keeps its change, nothing is written.
        let error = await captureDataError {
            try await reader.perform {
                let item = Item(context: reader)
                item.name = "durian"
                try reader.save()
            }
        }
        guard case .readOnlyContext(let message) = error else {
            Issue.record("expected readOnlyContext, got \(String(describing: error))")
            return
        }
        #expect(message.contains("read-only"))
        #expect(await reader.perform { reader.hasChanges })
        let batch = await captureDataError {
            _ = try await reader.execute(BatchDeleteRequest(fetchRequest: FetchRequest<Item>()))
        }
        guard case .readOnlyContext = batch else {
            Issue.record("expected readOnlyContext from a batch delete, got \(String(describing: batch))")
            return
        }
        #expect(try await stage.container.rawIntegers("SELECT count(*) FROM \"item\"") == [3])

        try await stage.resume()
        try await Deadline.poll("the replica catches up") {
            (try? await stage.itemNames(in: stage.container.newReadOnlyContext())) == ["apple", "bread", "cheese"]
        }
    }

    @Test func aContextReadsItsOwnWritesUntilTheReplicaHasReplayedThem() async throws {
        let stage = try await stage()
        defer { Task { await stage.close() } }
        _ = try await stage.container.saveItem(named: "apple")
        try await stage.pause()

        let writer = stage.container.newBackgroundContext()
        try await writer.perform {
            let item = Item(context: writer)
            item.name = "bread"
            try writer.save()
        }
        let before = try #require(stage.coordinator.replicaStatistics)
        // Its own save is not replayed yet: the fetch that allows the replica goes to the primary.
        #expect(try await stage.itemNames(in: writer, allowingReplica: true) == ["apple", "bread"])
        let waiting = try #require(stage.coordinator.replicaStatistics)
        #expect(waiting.readsOnPrimaryAwaitingReplay == before.readsOnPrimaryAwaitingReplay + 1)
        #expect(waiting.readsOnReplica == before.readsOnReplica)

        // The same fetch with eventual consistency reads the replica, behind.
        writer.replicaConsistency = .eventual
        #expect(try await stage.itemNames(in: writer, allowingReplica: true) == ["apple"])
        writer.replicaConsistency = .ownWrites

        // Another context: its own writes are none; what the coordinator wrote, on request.
        let reader = stage.container.newReadOnlyContext()
        #expect(try await stage.itemNames(in: reader) == ["apple"])
        let strict = stage.container.newReadOnlyContext()
        strict.replicaConsistency = .coordinatorWrites
        #expect(try await stage.itemNames(in: strict) == ["apple", "bread"])

        // Once replayed, the writer's reads are the replica's again.
        try await stage.resume()
        try await stage.waitForReplay()
        let replayed = try #require(stage.coordinator.replicaStatistics)
        #expect(try await stage.itemNames(in: writer, allowingReplica: true) == ["apple", "bread"])
        let after = try #require(stage.coordinator.replicaStatistics)
        #expect(after.readsOnReplica == replayed.readsOnReplica + 1)
        #expect(after.readsOnPrimaryAwaitingReplay == replayed.readsOnPrimaryAwaitingReplay)
    }

    @Test func mergedSavesAndBatchRequestsAreReadOnlyOnceReplayed() async throws {
        let stage = try await stage()
        defer { Task { await stage.close() } }
        let apple = try await stage.container.saveItem(named: "apple")
        try await stage.waitForReplay()
        let reader = stage.container.newReadOnlyContext()
        reader.automaticallyMergesChangesFromParent = true
        func matching(_ weight: Int, in context: ManagedObjectContext) async throws -> Int {
            try await context.perform {
                try context.count(for: FetchRequest<Item>(predicate: try FetchPredicate(format: "weight == %@", weight)))
            }
        }
        #expect(try await matching(0, in: reader) == 1)
        try await stage.pause()

        // A sibling's save merged into the reader: the reader's next fetch must show it. (The
        // merge is queued on the reader before the writer's block returns.)
        let writer = stage.container.newBackgroundContext()
        try await writer.perform {
            (writer.object(with: apple) as! Item).weight = 7
            try writer.save()
        }
        #expect(try await matching(7, in: reader) == 1)

        // A batch update merged into the reader: the same.
        var update = BatchUpdateRequest(entity: Item.self)
        update.propertiesToUpdate = ["weight": 9]
        update.contextsToMerge = [reader]
        _ = try await writer.execute(update)
        #expect(try await matching(9, in: reader) == 1)
        // The replica has neither yet: the reader's fetches went to the primary.
        let eventual = stage.container.newReadOnlyContext()
        eventual.replicaConsistency = .eventual
        #expect(try await matching(0, in: eventual) == 1)
    }

    @Test func rowsFromTheReplicaKeepTheirVersionsAndStayOutOfTheRowCache() async throws {
        let stage = try await stage()
        defer { Task { await stage.close() } }
        _ = try await stage.container.saveItem(named: "apple")
        let bread = try await stage.container.saveItem(named: "bread")
        try await stage.waitForReplay()

        // Fetched from the replica, edited and saved on the primary: the row version read
        // there is the primary's (a physical replica keeps xmin), so the save goes through.
        let editor = stage.container.newBackgroundContext()
        try await editor.perform {
            let item = try #require(try editor.fetch(named("apple")).first)
            item.weight = 5
            try editor.save()
        }
        #expect(try await stage.container.rawIntegers("SELECT weight FROM \"item\" WHERE name = 'apple'") == [5])

        try await stage.pause()
        try await stage.container.rawExecute("UPDATE \"item\" SET weight = 3 WHERE name = 'bread'")
        // A context fetches bread's new row from the primary (into the row cache); a read-only
        // context then reads the old row from the replica, which the row cache must not take.
        let holder = stage.container.newBackgroundContext()
        let held = try await holder.perform { try holder.fetch(FetchRequest<Item>(predicate: try FetchPredicate(format: "name == %@", "bread"))).count }
        #expect(held == 1)
        let reader = stage.container.newReadOnlyContext()
        #expect(try await reader.perform { try reader.fetch(named("bread")).first?.weight } == 0)
        let later = stage.container.newBackgroundContext()
        #expect(await later.perform { (later.object(with: bread) as! Item).weight } == 3)

        // A stale row read on the replica is a conflict on save, as any stale row is.
        let stale = stage.container.newBackgroundContext()
        stale.replicaConsistency = .eventual
        let error = await captureDataError {
            try await stale.perform {
                let item = try #require(try stale.fetch(named("bread")).first)
                #expect(item.weight == 0)
                item.notes = "stale"
                try stale.save()
            }
        }
        guard case .mergeConflict(let conflicts) = error else {
            Issue.record("expected a merge conflict, got \(String(describing: error))")
            return
        }
        #expect(conflicts.map(\.objectID) == [bread])
        #expect(try await stage.container.rawStrings("SELECT coalesce(notes, '-') FROM \"item\" WHERE name = 'bread'") == ["-"])
    }

    /// Items called `name`, allowed on the replica.
    func named(_ name: String) throws -> FetchRequest<Item> {
        var request = FetchRequest<Item>(predicate: try FetchPredicate(format: "name == %@", name))
        request.allowsReadingFromReplica = true
        return request
    }

    @Test func aServerThatIsNotAStandbyIsRefusedAsAReplica() async throws {
        let (primary, _) = try Self.servers.get()
        let container = PersistentContainer(name: "NotAReplica", model: testModel)
        let error = await captureDataError {
            try await container.loadPersistentStores(configuration: primary.configuration, options: .init(
                createSchemaIfMissing: true, readReplicaConfiguration: primary.configuration))
        }
        guard case .invalidRequest(let message) = error else {
            Issue.record("expected invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(message.contains("is not a standby"))
        #expect(!container.persistentStoreCoordinator.isLoaded)
    }

    @Test func readsGoToThePrimaryWhenTheReplicaIsDown() async throws {
        let stage = try await stage()
        defer { Task { await stage.close() } }
        // A standby of its own, stopped once the store has loaded.
        let (primary, _) = try Self.servers.get()
        let standby = try primary.startStandby()
        var replica = standby.configuration
        replica.database = stage.primary.database
        let container = PersistentContainer(name: "Lonely", model: testModel)
        try await Deadline.poll("the second standby has the database") {
            guard let connection = try? await Connection.connect(replica) else { return false }
            await connection.close()
            return true
        }
        try await container.loadPersistentStores(configuration: stage.primary, options: .init(readReplicaConfiguration: replica))
        defer { Task { await container.persistentStoreCoordinator.close() } }
        _ = try await container.saveItem(named: "apple")
        standby.stop()
        let reader = container.newReadOnlyContext()
        reader.replicaConsistency = .eventual
        #expect(try await stage.itemNames(in: reader) == ["apple"])
        let statistics = try #require(container.persistentStoreCoordinator.replicaStatistics)
        #expect(statistics.readsOnPrimaryReplicaUnavailable >= 1)
    }
}
