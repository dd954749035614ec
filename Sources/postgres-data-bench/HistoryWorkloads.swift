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
        for (container, fetched) in [(plain, plainFetched), (tracked, trackedFetched)] {
            let context = container.newBackgroundContext()
            try await context.perform {
                var request = FetchRequest<BenchItem>()
                request.returnsObjectsAsFaults = false
                let count = try context.fetch(request).count
                precondition(count == updates)
            }
            fetched.context = context
        }
    }
    return [
        Workload(name: "H W1 save \(inserts.formatted()): history on/off", prepare: resetEmpty, client: {
            try await saveNewItems(tracked, count: inserts)
        }, raw: {
            try BlockingWait.run { try await saveNewItems(plain, count: inserts) }
        }),
        Workload(name: "H W6 save \(updates.formatted()): history on/off", prepare: prepareUpdates, client: {
            try await saveUpdatedItems(trackedFetched.context!)
        }, raw: {
            try BlockingWait.run { try await saveUpdatedItems(plainFetched.context!) }
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

/// Merge latency: a save by one coordinator until another coordinator's merging context
/// reports the new object (NOTIFY at commit, the listener reads the history, the context
/// merges). The two coordinators share nothing but the server, as two processes would. The
/// baseline is a bare NOTIFY from one connection to another listening one.
func measureMergeLatency(configuration: Configuration, saves: Int) async throws -> (merge: [Double], notify: [Double]) {
    let options = PersistentStoreCoordinator.StoreOptions(persistentHistoryTracking: true)
    let writer = PersistentContainer(name: "Writer", model: ManagedObjectModel(BenchItem.self))
    try await writer.loadPersistentStores(configuration: configuration, options: options)
    let reader = PersistentContainer(name: "Reader", model: ManagedObjectModel(BenchItem.self))
    try await reader.loadPersistentStores(configuration: configuration, options: options)
    let context = reader.newBackgroundContext()
    context.automaticallyMergesChangesFromParent = true
    let seen = Locked<[ManagedObjectID: ContinuousClock.Instant]>([:])
    let changes = context.notifications()
    let watcher = Task {
        for await case .objectsDidChange(let change) in changes {
            let now = ContinuousClock.now
            seen.withLock { for id in change.insertedObjectIDs { $0[id] = now } }
        }
    }
    var merge: [Double] = []
    for i in 0..<saves {
        let (id, saved) = try await writer.performBackgroundTask { context in
            let item = BenchItem(context: context)
            item.name = "merge-\(i)"
            item.createdAt = epoch
            try context.save()
            return (item.objectID, ContinuousClock.now)
        }
        var arrived: ContinuousClock.Instant?
        let limit = ContinuousClock.now + .seconds(10)
        while arrived == nil {
            arrived = seen.withLock { $0[id] }
            if arrived == nil {
                guard ContinuousClock.now < limit else { throw BenchmarkError("save \(i) never reached the other coordinator") }
                try await Task.sleep(for: .microseconds(200))
            }
        }
        merge.append(milliseconds(arrived! - saved))
    }
    watcher.cancel()
    await writer.persistentStoreCoordinator.close()
    await reader.persistentStoreCoordinator.close()

    let listener = try await Connection.connect(configuration)
    let sender = try await Connection.connect(configuration)
    try await listener.listen(on: "bench")
    let delivered = Locked<[String: ContinuousClock.Instant]>([:])
    let listening = Task {
        for try await notification in listener.notifications() {
            let now = ContinuousClock.now
            delivered.withLock { $0[notification.payload] = now }
        }
    }
    var notify: [Double] = []
    for i in 0..<saves {
        let sent = ContinuousClock.now
        try await sender.notify(channel: "bench", payload: "\(i)")
        while delivered.withLock({ $0["\(i)"] }) == nil { try await Task.sleep(for: .microseconds(200)) }
        notify.append(milliseconds(delivered.withLock { $0["\(i)"]! } - sent))
    }
    listening.cancel()
    _ = await listening.result
    await listener.close()
    await sender.close()
    return (merge, notify)
}
