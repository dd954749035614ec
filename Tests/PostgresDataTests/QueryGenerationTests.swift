import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import Testing

/// Query generations: contexts pinned to one snapshot (a held `REPEATABLE READ` transaction)
/// read it in every way they read, whatever others commit, until they save, refresh or unpin.
@Suite struct QueryGenerationTests {
    private static func seed(_ container: PersistentContainer, count: Int) async throws -> [ManagedObjectID] {
        try await container.performBackgroundTask { context in
            let items = (0..<count).map { index -> Item in
                let item = Item(context: context)
                item.name = "item \(index)"
                return item
            }
            try context.save()
            return items.map(\.objectID)
        }
    }

    /// What a context sees of the items: how many, their total weight by a fetch refreshing
    /// the objects it finds changed, by a dictionary fetch, and by faults filled one by one.
    private static func view(_ context: ManagedObjectContext, ids: [ManagedObjectID]) throws -> [Int] {
        var all = FetchRequest<Item>()
        all.shouldRefreshRefetchedObjects = true
        let fetched = try context.fetch(all)
        var sum = FetchRequest<FetchedDictionary>(entityName: "Item")
        sum.propertiesToFetch = [.expression(.sum("weight", as: "total"))]
        guard case .integer(let total)? = try context.fetch(sum).first?["total"] else { return [] }
        var faulted = 0
        for id in ids {
            let item = try #require(context.object(with: id) as? Item)
            context.refresh(item, mergeChanges: false)
            faulted += item.weight
        }
        return [try context.count(for: FetchRequest<Item>()), fetched.reduce(0) { $0 + $1.weight }, Int(total), faulted]
    }

    @Test func twoPinnedContextsAgreeWhileAnotherProcessWrites() async throws {
        let container = try await makeContainer()
        let ids = try await Self.seed(container, count: 20)
        let first = container.newBackgroundContext()
        let second = container.newBackgroundContext()
        let unpinned = container.newBackgroundContext()
        let pinned = try await first.perform { () throws -> [Int] in
            try first.setQueryGenerationFrom(.current)
            return try Self.view(first, ids: ids)
        }
        #expect(pinned == [20, 0, 0, 0])
        let token = try await first.perform { try #require(first.queryGenerationToken) }
        try await second.perform { try second.setQueryGenerationFrom(token) }

        // psql, another process, commits 60 times: every item heavier by one, one item more.
        let psql = try ServerBinaries.locate().directory + "/psql"
        let configuration = try container.persistentStoreCoordinator.connectionPool.configuration
        let writer = try ChildProcess([psql, configuration.url(redactingPassword: false), "-v", "ON_ERROR_STOP=1", "-c", """
            DO $$ BEGIN
              FOR i IN 1..60 LOOP
                UPDATE item SET weight = weight + 1;
                INSERT INTO item (name, created_at, done, weight) VALUES ('from psql ' || i, now(), false, 0);
                COMMIT;
                PERFORM pg_sleep(0.01);
              END LOOP;
            END $$
            """], environment: ProcessInfo.processInfo.environment, outputPath: nil)
        // Reads while it writes (as many rounds as the machine's pace allows), and once after.
        var rounds = 0
        while writer.isRunning || rounds == 0 {
            rounds += 1
            // The unpinned context reads first: its rows enter the row cache, which the pinned
            // ones must not fill from.
            _ = try await unpinned.perform { () throws in try Self.view(unpinned, ids: ids) }
            #expect(try await first.perform { () throws in try Self.view(first, ids: ids) } == pinned)
            #expect(try await second.perform { () throws in try Self.view(second, ids: ids) } == pinned)
        }
        #expect(await writer.exit(within: .seconds(60)) == 0)
        _ = try await unpinned.perform { () throws in try Self.view(unpinned, ids: ids) }
        #expect(try await first.perform { () throws in try Self.view(first, ids: ids) } == pinned)
        #expect(try await second.perform { () throws in try Self.view(second, ids: ids) } == pinned)
        // 80 items; the first 20 one heavier per commit, the one inserted by commit i 60 - i.
        let final = [80, 20 * 60 + (0..<60).reduce(0, +), 20 * 60 + (0..<60).reduce(0, +), 20 * 60]
        #expect(try await unpinned.perform { () throws in try Self.view(unpinned, ids: ids) } == final)

        // Refreshing moves a context to the newest generation; the other stays.
        try await first.perform { () throws in
            first.refreshAllObjects()
            #expect(try Self.view(first, ids: ids) == final)
        }
        #expect(try await second.perform { () throws in try Self.view(second, ids: ids) } == pinned)
        try await second.perform {
            try second.setQueryGenerationFrom(nil)
            #expect(second.queryGenerationToken == nil)
            #expect(try Self.view(second, ids: ids) == final)
        }
        await container.persistentStoreCoordinator.close()
    }

    @Test func aPinnedContextsSaveConflictsWithChangesAfterItsSnapshotThenMovesOn() async throws {
        let container = try await makeContainer()
        let ids = try await Self.seed(container, count: 1)
        let context = container.newBackgroundContext()
        let before = try await context.perform { () throws -> QueryGenerationToken? in
            try context.setQueryGenerationFrom(.current)
            #expect(try #require(context.existingObject(with: ids[0]) as? Item).weight == 0)
            return context.queryGenerationToken
        }
        try await container.rawExecute("UPDATE item SET weight = 5")
        let conflict = await captureDataError {
            try await context.perform {
                let item = try #require(try context.fetch(FetchRequest<Item>()).first)
                #expect(item.weight == 0, "still the snapshot's row")
                item.name = "renamed while pinned"
                try context.save()
            }
        }
        guard case .mergeConflict(let conflicts)? = conflict else {
            Issue.record("expected a merge conflict, got \(String(describing: conflict))")
            return
        }
        #expect(conflicts.map(\.objectID) == ids)
        #expect(try await container.rawStrings("SELECT name FROM item") == ["item 0"])

        try await context.perform {
            context.mergePolicy = .mergeByPropertyObjectTrump
            try context.save()
            // Saved: the context reads the newest generation, with its own change on the other's.
            #expect(context.queryGenerationToken != before && context.queryGenerationToken != nil)
            let item = try #require(try context.fetch(FetchRequest<Item>()).first)
            #expect(item.weight == 5 && item.name == "renamed while pinned")
        }
        #expect(try await container.rawStrings("SELECT name || ' ' || weight FROM item") == ["renamed while pinned 5"])
        await container.persistentStoreCoordinator.close()
    }

    @Test func asynchronousFetchesAndBatchedFaultsOfAPinnedContextReadItsSnapshot() async throws {
        let container = try await makeContainer()
        let ids = try await Self.seed(container, count: 500)
        let context = container.newBackgroundContext()
        try await context.perform { try context.setQueryGenerationFrom(.current) }
        _ = try await context.perform { () throws in try context.count(for: FetchRequest<Item>()) }
        try await container.rawExecute("UPDATE item SET weight = 3; DELETE FROM item WHERE name = 'item 7'")

        let weights = Locked<[Int]>([])
        var request = FetchRequest<Item>()
        request.fetchBatchSize = 64
        let asynchronous = AsynchronousFetchRequest(fetchRequest: request) { result in
            weights.withLock { $0 = (result.finalResult ?? []).map(\.weight) }
        }
        let result = try await context.perform { () throws in try context.execute(asynchronous) }
        try await result.wait()
        #expect(result.operationError == nil)
        #expect(weights.withLock { $0.count } == 500 && weights.withLock { $0.allSatisfy { $0 == 0 } })

        try await context.perform {
            var batched = FetchRequest<Item>()
            batched.fetchBatchSize = 50
            let items = try context.fetch(batched)
            #expect(items.count == 500 && items.allSatisfy { $0.weight == 0 })
            let seven = try #require(context.existingObject(with: ids[7]) as? Item)
            #expect(seven.name == "item 7", "deleted after the snapshot, still there in it")
        }
        await container.persistentStoreCoordinator.close()
    }

    @Test func aGenerationHoldsOneConnectionUntilNothingNamesItAndCloseEndsIt() async throws {
        let container = try await makeContainer()
        _ = try await Self.seed(container, count: 3)
        let pool = try container.persistentStoreCoordinator.connectionPool
        let database = try #require(pool.configuration.database)
        let holding = """
            SELECT count(*) FROM pg_stat_activity
            WHERE datname = '\(database)' AND state = 'idle in transaction' AND backend_xmin IS NOT NULL
            """
        let contexts = (0..<3).map { _ in container.newBackgroundContext() }
        try await contexts[0].perform {
            try contexts[0].setQueryGenerationFrom(.current)
            #expect(contexts[0].queryGenerationToken?.description == "QueryGenerationToken(not read yet)")
        }
        #expect(try await container.rawIntegers(holding) == [0], "pinning reads nothing until the context reads")
        do {
            // The token lives in this block only: a token names its generation as a context does.
            let token = try await contexts[0].perform { () throws -> QueryGenerationToken in
                _ = try contexts[0].fetch(FetchRequest<Item>())
                return try #require(contexts[0].queryGenerationToken)
            }
            #expect(token.description.hasPrefix("QueryGenerationToken(snapshot "))
            for context in contexts.dropFirst() {
                try await context.perform {
                    try context.setQueryGenerationFrom(token)
                    #expect(try context.count(for: FetchRequest<Item>()) == 3)
                }
            }
        }
        #expect(try await container.rawIntegers(holding) == [1], "three contexts, one snapshot, one connection")
        for context in contexts {
            try await context.perform { try context.setQueryGenerationFrom(nil) }
        }
        try await Deadline.poll("the generation's transaction ended once nothing named it") {
            try await container.rawIntegers(holding) == [0]
        }

        // Closing the store ends a live generation instead of waiting for it.
        try await contexts[1].perform {
            try contexts[1].setQueryGenerationFrom(.current)
            #expect(try contexts[1].count(for: FetchRequest<Item>()) == 3)
        }
        try await Deadline.within(.seconds(30), "closing the store with a pinned context") {
            await container.persistentStoreCoordinator.close()
        }
    }

    @Test func aLostGenerationFailsClearlyAndPinningAgainRecovers() async throws {
        let container = try await makeContainer()
        _ = try await Self.seed(container, count: 2)
        let context = container.newBackgroundContext()
        try await context.perform {
            try context.setQueryGenerationFrom(.current)
            #expect(try context.count(for: FetchRequest<Item>()) == 2)
        }
        let database = try #require(try container.persistentStoreCoordinator.connectionPool.configuration.database)
        let terminated = try await container.rawIntegers("""
            SELECT count(pg_terminate_backend(pid, 30000)) FROM pg_stat_activity
            WHERE datname = '\(database)' AND state = 'idle in transaction'
            """)
        #expect(terminated == [1])
        let error = await captureDataError {
            try await context.perform { _ = try context.fetch(FetchRequest<Item>()) }
        }
        guard case .queryGenerationEnded(let reason)? = error else {
            Issue.record("expected queryGenerationEnded, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("setQueryGenerationFrom(.current)"))
        #expect(error?.isRetryable == false)
        // The same generation stays unreadable, and cannot be given to another context.
        let other = container.newBackgroundContext()
        let token = try await context.perform { try #require(context.queryGenerationToken) }
        let refused = await captureDataError { try await other.perform { try other.setQueryGenerationFrom(token) } }
        if case .queryGenerationEnded? = refused {} else { Issue.record("expected queryGenerationEnded, got \(String(describing: refused))") }
        try await context.perform {
            try context.setQueryGenerationFrom(.current)
            #expect(try context.count(for: FetchRequest<Item>()) == 2)
        }
        await container.persistentStoreCoordinator.close()
    }

    @Test func aTokenOfAnotherStoreIsRefused() async throws {
        let first = try await makeContainer()
        let second = try await makeContainer()
        let context = first.newBackgroundContext()
        let token = try await context.perform { () throws -> QueryGenerationToken in
            try context.setQueryGenerationFrom(.current)
            return try #require(context.queryGenerationToken)
        }
        let stranger = second.newBackgroundContext()
        let error = await captureDataError { try await stranger.perform { try stranger.setQueryGenerationFrom(token) } }
        guard case .invalidRequest(let reason)? = error else {
            Issue.record("expected invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("another store"))
        await first.persistentStoreCoordinator.close()
        await second.persistentStoreCoordinator.close()
    }
}
