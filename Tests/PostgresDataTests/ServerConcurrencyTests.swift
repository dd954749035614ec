import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import Testing

/// Units of work as a server runs them — a context per request, a fetch by key, a change, a
/// save — thousands at once over a pool of 8, against a real PostgreSQL.
@Suite(.serialized) struct ServerConcurrencyTests {
    /// Threads of this process now (Linux: `Threads:` of /proc/self/status).
    static func threadCount() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("Threads:") {
            return Int(line.dropFirst("Threads:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }

    /// The most threads seen while `body` runs, sampled every 5 ms.
    static func peakThreads(during body: () async throws -> Void) async throws -> Int {
        let peak = Locked(threadCount())
        let sampler = Task.detached {
            while !Task.isCancelled {
                let now = threadCount()
                peak.withLock { $0 = max($0, now) }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        defer { sampler.cancel() }
        try await body()
        return peak.withLock { $0 }
    }

    /// Accounts with codes `A0`…, each with a weight of 0.
    static func seedAccounts(_ container: PersistentContainer, count: Int) async throws {
        try await container.performBackgroundTask { context in
            for index in 0..<count {
                let item = Item(context: context)
                item.name = "A\(index)"
            }
            try context.save()
        }
    }

    /// One request: a new context, a fetch by key, a change, a save — suspending, not blocking.
    static func unitOfWork(_ container: PersistentContainer, code: String) async throws {
        let context = container.newBackgroundContext()
        try await context.perform {
            let request = FetchRequest<Item>(predicate: try FetchPredicate(format: "name == %@", code))
            guard let item = try await context.fetch(request).first else { throw PostgresDataError.invalidRequest("no \(code)") }
            item.weight += 1
            try await context.save()
        }
    }

    @Test func twoThousandConcurrentUnitsOfWorkAllFinishWithBoundedThreads() async throws {
        let container = try await makeContainer()
        try await Self.seedAccounts(container, count: 2_000)
        let before = Self.threadCount()
        let peak = try await Self.peakThreads {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<2_000 {
                    group.addTask { try await Self.unitOfWork(container, code: "A\(index)") }
                }
                try await group.waitForAll()
            }
        }
        // Every change landed, one per account.
        let total = try await container.rawIntegers("SELECT sum(weight)::int8 FROM item")
        #expect(total == [2_000])
        // The library adds a fixed number of threads (context threads, its own, a thread per
        // connection), whatever the number of tasks: far fewer than the 2,000 units a thread
        // each would take. (Suites running beside this one add threads of their own.)
        let bound = before + 200
        #expect(peak <= bound, "peak \(peak) threads, before \(before)")
    }

    @Test func synchronousCallersBlockingEveryCooperativeThreadDeadlockNothing() async throws {
        let container = try await makeContainer()
        try await Self.seedAccounts(container, count: 1_000)
        let finished = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<1_000 {
                if index % 4 == 0 {
                    // performAndWait from async code blocks a cooperative thread for the whole
                    // unit of work; far more of them than there are cooperative threads.
                    group.addTask {
                        let context = container.newBackgroundContext()
                        try context.performAndWait {
                            let request = FetchRequest<Item>(predicate: try FetchPredicate(format: "name == %@", "A\(index)"))
                            guard let item = try context.fetch(request).first else { return }
                            item.weight += 1
                            try context.save()
                        }
                        finished.withLock { $0 += 1 }
                    }
                } else {
                    group.addTask {
                        try await Self.unitOfWork(container, code: "A\(index)")
                        finished.withLock { $0 += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(finished.withLock { $0 } == 1_000)
        #expect(try await container.rawIntegers("SELECT sum(weight)::int8 FROM item") == [1_000])
    }

    @Test func blocksOfOneContextRunOneAtATimeInOrderAcrossAwaits() async throws {
        let container = try await makeContainer()
        try await Self.seedAccounts(container, count: 1)
        let context = container.newBackgroundContext()
        let log = Locked<[String]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    try await context.perform {
                        log.withLock { $0.append("start \(index)") }
                        _ = try await context.count(for: FetchRequest<Item>())
                        log.withLock { $0.append("end \(index)") }
                    }
                }
            }
            try await group.waitForAll()
        }
        let entries = log.withLock { $0 }
        #expect(entries.count == 40)
        for pair in stride(from: 0, to: entries.count, by: 2) {
            let started = entries[pair].dropFirst("start ".count)
            #expect(entries[pair + 1] == "end \(started)", "a block began while another was suspended: \(entries)")
        }
    }

    @Test func aFaultWhoseRowAnotherProcessDeletedReadsAsDeleted() async throws {
        let container = try await makeContainer()
        try await Self.seedAccounts(container, count: 3)
        let context = container.newBackgroundContext()
        let id = try await context.perform { () throws in
            let request = FetchRequest<Item>(predicate: try FetchPredicate(format: "name == %@", "A1"))
            return try #require(try context.fetch(request).first).objectID
        }
        // The row goes, from another connection, while the context holds no values for it.
        await context.perform { context.reset() }
        _ = try await container.rawIntegers("WITH gone AS (DELETE FROM item WHERE name = 'A1' RETURNING 1) SELECT count(*) FROM gone")
        try await context.perform { () throws in
            let item = try #require(context.object(with: id) as? Item)
            #expect(item.isFault)
            #expect(item.name == "")          // its default value: the process goes on
            #expect(item.isDeleted)
            #expect(throws: PostgresDataError.self) { try context.existingObject(with: id) }
        }
        // With the switch off, the access records the error and the block throws it.
        let strict = container.newBackgroundContext()
        strict.shouldDeleteInaccessibleFaults = false
        await #expect(throws: PostgresDataError.self) {
            try await strict.perform {
                let item = try #require(strict.object(with: id) as? Item)
                _ = item.name
            }
        }
        // load() throws at the access.
        try await context.perform { () throws in
            context.reset()
            let item = context.object(with: id)
            #expect(throws: PostgresDataError.self) { try item.load() }
        }
    }

    /// After an await on the store, a block goes on on the thread of the connection it just
    /// used. Synchronous store work there (a fault to read, a fetch, a save, a wait for
    /// another context's turn) must not wait for that thread: with one connection, the fault's
    /// query needs the very connection whose thread the block runs on.
    @Test func synchronousStoreWorkAfterAnAwaitNeedsNoOtherThread() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_data")
        let container = PersistentContainer(name: "Test", model: testModel)
        try await container.loadPersistentStores(configuration: configuration,
                                                 options: .init(createSchemaIfMissing: true, maximumConnections: 1))
        try await Self.seedAccounts(container, count: 20)
        let other = container.newBackgroundContext()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<20 {
                group.addTask {
                    let context = container.newBackgroundContext()
                    return try await context.perform {
                        let request = FetchRequest<ManagedObjectID>(entityName: "Item",
                                                                    predicate: try FetchPredicate(format: "name == %@", "A\(index)"))
                        let id = try #require(try await context.fetch(request).first)
                        // A fault with no row in memory: a query, synchronously.
                        let item = try #require(context.object(with: id) as? Item)
                        context.refresh(item, mergeChanges: false)
                        item.weight += 1
                        func saveSynchronously() throws { try context.save() }
                        try saveSynchronously()
                        // Another context's turn, waited for synchronously.
                        let count = try other.performAndWait { try other.count(for: FetchRequest<Item>()) }
                        #expect(count == 20)
                        return item.weight
                    }
                }
            }
            for try await weight in group { #expect(weight == 1) }
        }
        #expect(try await container.rawIntegers("SELECT sum(weight)::int8 FROM item") == [20])
    }
}
