import CLibPQ
import Foundation
import PostgresClient
import PostgresData

/// History overhead: W1 and W6 saved by a container that tracks persistent history (A)
/// against the same saves by one that does not (B), so the ratio is the cost of history.
func makeHistoryWorkloads(plain: PersistentContainer, tracked: PersistentContainer, client connection: Connection,
                          rows: Int) -> [Workload] {
    let inserts = max(1, rows / 10)
    let updates = max(1, rows / 100)
    let resetEmpty: () async throws -> Void = {
        try await connection.execute(script: "TRUNCATE items RESTART IDENTITY")
    }
    // Both sides' objects are fetched untimed before the runs.
    let plainFetched = FetchedObjects()
    let trackedFetched = FetchedObjects()
    let prepareUpdates: () async throws -> Void = {
        try await fillItems(connection, rows: updates)
        try await plainFetched.fetch(updates, from: plain)
        try await trackedFetched.fetch(updates, from: tracked)
    }
    return [
        Workload(name: "H W1 save \(inserts.formatted()): history on/off", prepare: resetEmpty, client: {
            try await saveNewItems(tracked, count: inserts)
        }, raw: {
            try BlockingWait.run { try await saveNewItems(plain, count: inserts) }
        }),
        Workload(name: "H W6 save \(updates.formatted()): history on/off", prepare: prepareUpdates, client: {
            try await saveUpdatedItems(trackedFetched)
        }, raw: {
            try BlockingWait.run { try await saveUpdatedItems(plainFetched) }
        }),
    ]
}

/// Runs async work from the synchronous raw side of a workload, on a thread of its own.
enum BlockingWait {
    static func run(_ operation: @escaping @Sendable () async throws -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        let failure = Locked<(any Error)?>(nil)
        Thread.detachNewThread {
            Task {
                do { try await operation() } catch { failure.withLock { $0 = error } }
                done.signal()
            }
        }
        done.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }
}

/// Merge latency: from the moment a writer coordinator's context saves a new object until
/// a reader coordinator's merging context reports it (NOTIFY at commit, the listener reads
/// the history, the context merges). The two coordinators share nothing but the server, as
/// two processes would, and both instants come from one monotonic clock, so a latency is
/// never negative. The baseline does the same with raw libpq: a writer inserts the row and
/// notifies in one transaction, a listener thread wakes on the notification and reads the row.
func measureMergeLatency(configuration: Configuration, saves: Int) async throws -> (merge: [Double], raw: [Double]) {
    let options = PersistentStoreCoordinator.StoreOptions(persistentHistoryTracking: true)
    let writer = PersistentContainer(name: "Writer", model: ManagedObjectModel(BenchItem.self))
    try await writer.loadPersistentStores(configuration: configuration, options: options)
    let reader = PersistentContainer(name: "Reader", model: ManagedObjectModel(BenchItem.self))
    try await reader.loadPersistentStores(configuration: configuration, options: options)
    let context = reader.newBackgroundContext()
    context.automaticallyMergesChangesFromParent = true
    // By key: an object ID belongs to its coordinator's store, and these are two.
    let seen = Locked<[Int64: ContinuousClock.Instant]>([:])
    let changes = context.notifications()
    let watcher = Task {
        for await case .objectsDidChange(let change) in changes {
            let now = ContinuousClock.now
            seen.withLock { for id in change.insertedObjectIDs { if let key = id.primaryKey { $0[key] = now } } }
        }
    }
    var merge: [Double] = []
    for i in 0..<saves {
        let (id, saved) = try await writer.performBackgroundTask { context in
            let item = BenchItem(context: context)
            item.name = "merge-\(i)"
            item.createdAt = epoch
            let started = ContinuousClock.now
            try context.save()
            return (item.objectID.primaryKey ?? 0, started)
        }
        merge.append(milliseconds(try await arrival(of: id, in: seen) - saved))
    }
    watcher.cancel()
    await writer.persistentStoreCoordinator.close()
    await reader.persistentStoreCoordinator.close()
    return (merge, try await rawMergeLatency(configuration: configuration, saves: saves))
}

/// Waits (10 s at most) until `key` appears in `seen`.
func arrival<Key: Hashable & Sendable>(of key: Key, in seen: Locked<[Key: ContinuousClock.Instant]>) async throws -> ContinuousClock.Instant {
    let limit = ContinuousClock.now + .seconds(10)
    while true {
        if let arrived = seen.withLock({ $0[key] }) { return arrived }
        guard ContinuousClock.now < limit else { throw BenchmarkError("a save never reached the other side") }
        try await Task.sleep(for: .microseconds(200))
    }
}

/// The raw side of merge latency: INSERT … RETURNING id and NOTIFY in one transaction on one
/// connection; on another, a thread waiting on the socket reads each notified row.
func rawMergeLatency(configuration: Configuration, saves: Int) async throws -> [Double] {
    let writer = try RawConnection(configuration)
    let listener = try RawConnection(configuration)
    try listener.exec("LISTEN bench_merge")
    let seen = Locked<[Int64: ContinuousClock.Instant]>([:])
    let stop = Locked(false)
    let thread = Thread { [listener] in
        var poller = pollfd(fd: PQsocket(listener.handle), events: Int16(POLLIN), revents: 0)
        while !stop.withLock({ $0 }) {
            guard poll(&poller, 1, 10) > 0 else { continue }
            PQconsumeInput(listener.handle)
            while let notification = PQnotifies(listener.handle) {
                let key = Int64(String(cString: notification.pointee.extra)) ?? 0
                PQfreemem(notification)
                guard let result = try? listener.execBinary("\(selectAllWithVersions) WHERE id = \(key)") else { continue }
                let item = PQntuples(result) == 1 ? rawVersionedItem(result, 0) : nil
                PQclear(result)
                let now = ContinuousClock.now
                if let item { seen.withLock { $0[item.id] = now } }
            }
        }
    }
    thread.start()
    var latencies: [Double] = []
    for i in 0..<saves {
        let started = ContinuousClock.now
        try writer.exec("BEGIN")
        let inserted = try writer.execBinary("INSERT INTO items (name, created_at) VALUES ('raw-merge-\(i)', now()) RETURNING id")
        let key = Int64(bigEndian: UnsafeRawPointer(PQgetvalue(inserted, 0, 0)).loadUnaligned(as: Int64.self))
        PQclear(inserted)
        try writer.exec("NOTIFY bench_merge, '\(key)'")
        try writer.exec("COMMIT")
        latencies.append(milliseconds(try await arrival(of: key, in: seen) - started))
    }
    stop.withLock { $0 = true }
    while !thread.isFinished { try await Task.sleep(for: .milliseconds(1)) }
    return latencies
}
