import Foundation
import PostgresClient
@testable import PostgresData
import PostgresDataTesting
import Testing

/// Asynchronous fetches and batch walks: server-side cursors, progress per batch,
/// cancellation that reaches the server.
@Suite struct AsynchronousFetchTests {
    /// `count` items named "Item N", created a second apart, inserted in reverse order so
    /// that sorting by `createdAt` is not the table's order.
    private func seed(_ container: PersistentContainer, count: Int) async throws {
        try await container.rawExecute("""
            INSERT INTO item (name, created_at, done, weight)
            SELECT 'Item ' || g, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second', g % 2 = 0, g % 1000
            FROM generate_series(\(count), 1, -1) AS g
            """)
    }

    private func sortedByCreation() -> FetchRequest<Item> {
        var request = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "createdAt")])
        request.fetchBatchSize = 10_000
        return request
    }

    @Test func aMillionItemsArriveInBatchesWithProgressAndOtherWorkBetween() async throws {
        try await MemoryIntensiveTests.exclusively { try await fetchAMillionItems() }
    }

    private func fetchAMillionItems() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 1_000_000)
        let context = container.newBackgroundContext()
        let counts = Locked<[Int]>([])
        let completion = Locked<(count: Int, ordered: Bool, named: Bool)?>(nil)
        var asynchronous = AsynchronousFetchRequest(fetchRequest: sortedByCreation()) { result in
            let items = result.finalResult ?? []
            let ordered = zip(items, items.dropFirst()).allSatisfy { $0.createdAt < $1.createdAt }
            completion.withLock { $0 = (items.count, ordered, items.first?.name == "Item 1" && items.last?.name == "Item 1000000") }
        }
        asynchronous.progressHandler = { update in
            if !update.isFinished { counts.withLock { $0.append(update.rowCount) } }
        }
        let request = asynchronous
        let result = try await context.perform { () throws in try context.execute(request) }
        // Another block runs on the context's queue while the fetch is under way.
        var updates = result.progressUpdates().makeAsyncIterator()
        _ = await updates.next()
        let between = await context.perform { (result.isFinished, Int(result.progress.completedUnitCount)) }
        #expect(!between.0 && between.1 < 1_000_000)
        try await result.wait()

        let reported = counts.withLock { $0 }
        #expect(reported.count == 100)
        #expect(reported == (1...100).map { $0 * 10_000 })
        let seen = try #require(completion.withLock { $0 })
        #expect(seen.count == 1_000_000 && seen.ordered && seen.named)
        #expect(result.progress.completedUnitCount == 1_000_000 && result.progress.totalUnitCount == 1_000_000)
        #expect(result.operationError == nil && result.estimatedResultCount == nil)
    }

    /// Faults of an asynchronous fetch keep their rows undecoded until they fire: every kind
    /// of value (NULLs, a to-one relationship) then reads as a fetch with values reads it,
    /// and a save by another context in between (gone by then) is what the fault shows.
    @Test func faultsFireWithTheirRowsAndWithSavesMadeSince() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 25_000)
        try await container.rawExecute("UPDATE item SET notes = 'note ' || weight WHERE weight % 7 = 0")
        try await container.performBackgroundTask { context in
            let list = TodoList(context: context)
            list.title = "Errands"
            var request = FetchRequest<Item>()
            request.predicate = try FetchPredicate(format: "name IN %@", ["Item 5", "Item 15000"])
            for item in try context.fetch(request) { item.list = list }
            try context.save()
        }
        @Sendable func describe(_ item: Item) -> String {
            "\(item.name)|\(item.createdAt.timeIntervalSince1970)|\(item.done)|\(item.weight)|\(item.notes ?? "nil")|\(item.list?.title ?? "-")"
        }
        let reader = container.newBackgroundContext()
        let expected = try await reader.perform { () throws in
            var request = self.sortedByCreation()
            request.returnsObjectsAsFaults = false
            let described = try reader.fetch(request).map(describe)
            // Its rows leave the row cache: the faults below find only their own there.
            reader.reset()
            return described
        }

        let context = container.newBackgroundContext()
        let request = AsynchronousFetchRequest(fetchRequest: sortedByCreation())
        let result = try await context.perform { () throws in try context.execute(request) }
        try await result.wait()
        let allFaults = await context.perform { result.finalResult?.allSatisfy(\.isFault) }
        #expect(allFaults == true)

        try await container.performBackgroundTask { other in
            var request = FetchRequest<Item>()
            request.predicate = try FetchPredicate(format: "name == 'Item 2'")
            try other.fetch(request)[0].name = "Renamed"
            try other.save()
        }
        let fired = await context.perform { result.finalResult?.map(describe) ?? [] }
        #expect(fired.count == 25_000)
        #expect(fired[1].hasPrefix("Renamed|"))
        #expect(Array(fired.dropFirst(2)) == Array(expected.dropFirst(2)) && fired[0] == expected[0])
        #expect(expected.contains { $0.hasSuffix("|Errands") } && expected.contains { $0.contains("|note ") })

        // Columns parsed from text (numeric, URL) are decoded in the fetch itself.
        try await container.performBackgroundTask { context in
            let profile = Profile(context: context)
            profile.price = Decimal(string: "12.34")!
            profile.homepage = URL(string: "https://example.com/a")
            try context.save()
        }
        let profiles = AsynchronousFetchRequest(fetchRequest: FetchRequest<Profile>())
        let fetched = try await context.perform { () throws in try context.execute(profiles) }
        try await fetched.wait()
        let profile = await context.perform { fetched.finalResult?.first.map { "\($0.price) \($0.homepage?.absoluteString ?? "")" } }
        #expect(profile == "12.34 https://example.com/a")
    }

    /// An asynchronous fetch's faults keep the cache's reader for their rows only while one
    /// of them still waits: once the last fires, or the context lets go of them, the cache
    /// stops keeping changed rows for it, though the fired objects still read their rows.
    @Test func theLastFaultToFireEndsTheFetchsReadingOfTheRowCache() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 3_000)
        let coordinator = container.persistentStoreCoordinator
        let context = container.newBackgroundContext()
        var smallBatches = sortedByCreation()
        smallBatches.fetchBatchSize = 1_000
        let request = AsynchronousFetchRequest(fetchRequest: smallBatches)
        let result = try await context.perform { () throws in try context.execute(request) }
        try await result.wait()
        #expect(coordinator.keepsRowsForReaders)
        let (firstNames, waiting) = await context.perform { () -> ([String], Bool) in
            let items = result.finalResult ?? []
            return (items.dropLast().map(\.name), items.last?.isFault == true)
        }
        #expect(firstNames.count == 2_999 && firstNames.last == "Item 2999" && waiting)
        #expect(coordinator.keepsRowsForReaders, "one fault still waits")
        let lastName = await context.perform { result.finalResult?.last?.name }
        #expect(lastName == "Item 3000")
        #expect(!coordinator.keepsRowsForReaders)
        let names = await context.perform { result.finalResult?.map(\.name) ?? [] }
        #expect(names.count == 3_000 && names[1500] == "Item 1501")

        // After a save elsewhere, every fault asks the cache for its row: those that take their
        // own end their wait as well.
        let again = try await context.perform { () throws in
            context.reset()
            return try context.execute(request)
        }
        try await again.wait()
        try await container.performBackgroundTask { other in
            var request = FetchRequest<Item>()
            request.predicate = try FetchPredicate(format: "name == 'Item 7'")
            try other.fetch(request)[0].name = "Renamed"
            try other.save()
        }
        #expect(coordinator.keepsRowsForReaders)
        let renamed = await context.perform { again.finalResult?.map(\.name) ?? [] }
        #expect(renamed.count == 3_000 && renamed[6] == "Renamed" && renamed[7] == "Item 8")
        #expect(!coordinator.keepsRowsForReaders)

        // Let go of unfired: a reset ends the reading too.
        let third = try await context.perform { () throws in
            context.reset()
            return try context.execute(request)
        }
        try await third.wait()
        #expect(coordinator.keepsRowsForReaders)
        await context.perform { context.reset() }
        #expect(!coordinator.keepsRowsForReaders)
        await coordinator.close()
    }

    /// Fired faults of an asynchronous fetch keep their rows to themselves (nothing enters the
    /// row cache), read their values across the chunks their rows are decoded in, and save
    /// against the version they were fetched with: a row changed since is a merge conflict,
    /// and nothing of the save is written.
    @Test func firedFaultsKeepTheirRowsAndTheirVersions() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 1_000)
        let coordinator = container.persistentStoreCoordinator
        let context = container.newBackgroundContext()
        let request = AsynchronousFetchRequest(fetchRequest: sortedByCreation())
        let result = try await context.perform { () throws in try context.execute(request) }
        try await result.wait()
        let read = await context.perform { result.finalResult?.map { "\($0.name) \($0.weight)" } ?? [] }
        #expect(read == (1...1_000).map { "Item \($0) \($0 % 1000)" })
        #expect(coordinator.cachedRowCount == 0)

        try await container.rawExecute("UPDATE item SET weight = 999 WHERE name = 'Item 300'")
        let outcome = await context.perform { () -> (error: PostgresDataError?, id: ManagedObjectID?) in
            guard let items = result.finalResult, items.count == 1_000 else { return (nil, nil) }
            items[299].weight = 1
            items[300].weight = 2
            do {
                try context.save()
                return (nil, items[299].objectID)
            } catch {
                return (error as? PostgresDataError, items[299].objectID)
            }
        }
        guard case .mergeConflict(let conflicts)? = outcome.error else {
            Issue.record("expected a merge conflict, got \(String(describing: outcome.error))")
            return
        }
        #expect(conflicts.map(\.objectID) == [outcome.id])
        #expect(conflicts.first?.databaseValues?["weight"] == .integer(999))
        let weights = try await container.rawIntegers("SELECT weight::int8 FROM item WHERE name IN ('Item 300', 'Item 301') ORDER BY name")
        #expect(weights == [999, 301])
    }

    /// A change known only by its ID (another process's, merged from history; a batch
    /// request's) while the faults wait: the changed row's fault loads it from the database,
    /// the others fire with the rows they kept.
    @Test func faultsLoadRowsChangedByOthersSinceTheirFetch() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 30)
        let context = container.newBackgroundContext()
        let request = AsynchronousFetchRequest(fetchRequest: sortedByCreation())
        let result = try await context.perform { () throws in try context.execute(request) }
        try await result.wait()
        let ids = try #require(await context.perform { result.finalResult?.map(\.objectID) })
        try await container.rawExecute("UPDATE item SET name = 'Changed ' || name, weight = weight + 1")

        let bystander = container.newBackgroundContext()
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: [.updated: [ids[3]]], into: [bystander])
        let fired = await context.perform { result.finalResult?.map { "\($0.name) \($0.weight)" } ?? [] }
        #expect(fired.count == 30)
        #expect(fired[3] == "Changed Item 4 5")
        #expect(fired[2] == "Item 3 3" && fired[4] == "Item 5 5")
    }

    @Test func totalsCanBeEstimatedOrCountedFirst() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 20_000)
        try await container.rawExecute("ANALYZE item")
        let context = container.newBackgroundContext()
        for (estimate, expected) in [(ResultCountEstimate.exact, 10_000...10_000), (.plannerEstimate, 5_000...15_000)] {
            var request = sortedByCreation()
            request.predicate = try FetchPredicate(format: "done == YES")
            var asynchronous = AsynchronousFetchRequest(fetchRequest: request)
            asynchronous.resultCountEstimate = estimate
            let started = asynchronous
            let result = try await context.perform { () throws in try context.execute(started) }
            try await result.wait()
            let estimated = try #require(result.estimatedResultCount)
            #expect(expected.contains(estimated), "\(estimate): \(estimated)")
            let count = await context.perform { result.finalResult?.count }
            #expect(count == 10_000)
        }
    }

    /// Fetches every item of `container` in batches of 100, the planner's estimate asked for;
    /// returns how many came, the identity map's capacity after each batch, and the estimate.
    private func capacitiesWhileFetching(_ container: PersistentContainer) async throws -> (count: Int?, capacities: [Int], estimate: Int?) {
        let context = container.newBackgroundContext()
        // An object registered first (a new list, which the context's inserted set holds): the
        // fetch cannot claim the map (``IdentityMap/Claim``), and looks each row up in a table.
        await context.perform { _ = TodoList(context: context) }
        var request = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "createdAt")])
        request.fetchBatchSize = 100
        var asynchronous = AsynchronousFetchRequest(fetchRequest: request)
        asynchronous.resultCountEstimate = .plannerEstimate
        let capacities = Locked<[Int]>([])
        asynchronous.progressHandler = { update in
            if !update.isFinished { capacities.withLock { $0.append(context.registered.capacity) } }
        }
        let started = asynchronous
        let result = try await context.perform { () throws in try context.execute(started) }
        try await result.wait()
        let count = await context.perform { result.finalResult?.count }
        return (count, capacities.withLock { $0 }, result.estimatedResultCount)
    }

    /// The identity map takes the planner's estimate at the first batch (up to 128 times that
    /// batch's rows) and is not rebuilt as the other batches come; a far higher estimate is
    /// not believed beyond that.
    @Test func theIdentityMapIsSizedOnceForTheEstimate() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 12_000)
        try await container.rawExecute("ANALYZE item")
        let (count, seen, _) = try await capacitiesWhileFetching(container)
        #expect(count == 12_000 && seen.count == 120)
        // One table from the first batch to the last, for all the rows (the estimate of a
        // table just analyzed is its size).
        #expect(seen.allSatisfy { $0 == seen.first } && (seen.first ?? 0) >= 12_000, "\(Set(seen).sorted())")

        // An estimate of a million rows when the first batch brought 50: 128 times the 50.
        let fresh = container.newBackgroundContext()
        let held = try await fresh.perform { () throws in
            let fetch = try CursorFetch(FetchRequest<Item>(), in: fresh)
            fetch.reserve(for: .keys(Array(1...50)), seen: 0, estimate: 1_000_000, claim: nil, in: fresh)
            return fresh.registered.capacity
        }
        #expect(held >= 128 * 50 && held < 100_000, "\(held)")
    }

    /// Rows updated since the last vacuum leave dead versions that the planner counts: its
    /// estimate is then several times the rows. The identity map is still one table from the
    /// first batch to the last, and is not grown toward the estimate.
    @Test func anEstimateFarAboveTheRowsDoesNotGrowTheIdentityMap() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 12_000)
        try await container.rawExecute("ANALYZE item")
        for _ in 0..<4 { try await container.rawExecute("UPDATE item SET name = name || '.'") }
        let (count, seen, estimate) = try await capacitiesWhileFetching(container)
        #expect(count == 12_000 && seen.count == 120)
        #expect((estimate ?? 0) >= 36_000, "the premise: an estimate far above the 12,000 rows, not \(String(describing: estimate))")
        #expect(seen.allSatisfy { $0 == seen.first } && (seen.first ?? 0) >= 12_000, "\(Set(seen).sorted())")
    }

    /// A fetch into a context with no registered object claims its map: no table is built
    /// while its batches come, and the first lookup afterwards finds its objects. An object
    /// another block registers between two batches, with the key of a row a later batch
    /// brings, ends the claim: that row is that object, and the result holds each key once.
    @Test func aFetchIntoAnEmptyContextRegistersItsObjectsWithoutATable() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 1_000)
        let reader = container.newBackgroundContext()
        let keys = try await reader.perform { () throws in try reader.fetch(self.sortedByCreation()).map(\.objectID) }
        #expect(keys.count == 1_000)
        for interrupted in [false, true] {
            let context = container.newBackgroundContext()
            var request = sortedByCreation()
            request.fetchBatchSize = 100
            var asynchronous = AsynchronousFetchRequest(fetchRequest: request)
            let capacities = Locked<[Int]>([])
            // (The map holds it; an identifier is enough to know it again.)
            let stranger = Locked<ObjectIdentifier?>(nil)
            asynchronous.progressHandler = { update in
                guard !update.isFinished else { return }
                capacities.withLock { $0.append(context.registered.capacity) }
                // After the first batch, the row the last batch brings, registered as a fault.
                if interrupted && update.rowCount == 100 {
                    stranger.withLock { $0 = ObjectIdentifier(context.object(with: keys[999])) }
                }
            }
            let started = asynchronous
            let result = try await context.perform { () throws in try context.execute(started) }
            try await result.wait()
            let (ids, lastIsStranger, registered, found) = await context.perform {
                let items = result.finalResult ?? []
                let last = items.last.map { ObjectIdentifier($0) }
                let strangerID = stranger.withLock { $0 }
                // Looked up by ID: the very objects of the result.
                let found = items.indices.allSatisfy { index in
                    context.registeredObject(for: keys[index]) === items[index]
                }
                return (items.map(\.objectID), strangerID == nil || last == strangerID, context.registeredObjects.count, found)
            }
            #expect(ids == keys, "interrupted: \(interrupted)")
            #expect(lastIsStranger && registered == 1_000 && found, "interrupted: \(interrupted)")
            let seen = capacities.withLock { $0 }
            #expect(seen.count == 10)
            if interrupted {
                // The first batch under the claim; then a table, for the stranger and the rest.
                #expect(seen.first == 0 && seen.dropFirst().allSatisfy { $0 >= 200 }, "\(seen)")
            } else {
                #expect(seen.allSatisfy { $0 == 0 }, "\(seen)")
            }
        }
    }

    @Test func cancelAfterTheThirdBatchDeliversNoResultAndLeavesTheConnectionHealthy() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 100_000)
        let context = container.newBackgroundContext()
        let holder = Locked<AsynchronousFetchResult<Item>?>(nil)
        let completed = Locked<(error: PostgresDataError?, final: Int?)?>(nil)
        var asynchronous = AsynchronousFetchRequest(fetchRequest: sortedByCreation()) { result in
            completed.withLock { $0 = (result.operationError as? PostgresDataError, result.finalResult?.count) }
        }
        asynchronous.progressHandler = { update in
            if update.batchCount == 3 { holder.withLock { $0 }?.cancel() }
        }
        let request = asynchronous
        let result = try await context.perform { () throws in
            let result = try context.execute(request)
            holder.withLock { $0 = result }
            return result
        }
        await #expect(throws: PostgresDataError.self) { try await result.wait() }
        let outcome = try #require(completed.withLock { $0 })
        #expect(outcome.error?.sqlState == "57014" && outcome.final == nil)
        #expect(result.finalResult == nil && result.progress.completedUnitCount >= 30_000)
        #expect(result.progress.completedUnitCount < 100_000)
        // A cancel after the end does nothing.
        result.cancel()
        #expect((result.operationError as? PostgresDataError)?.sqlState == "57014")
        // The pool serves the next query; no session is left inside a transaction.
        let count = try await context.perform { () throws in try context.count(for: FetchRequest<Item>()) }
        #expect(count == 100_000)
        #expect(try await container.rawIntegers("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'") == [0])
    }

    /// An asynchronous fetch whose statement waits on the server: another session (returned,
    /// to roll back) holds the table locked.
    private func fetchStuckOnTheServer() async throws -> (AsynchronousFetchResult<Item>, Connection) {
        let container = try await makeContainer()
        try await seed(container, count: 1_000)
        let blocker = try await Connection.connect(container.persistentStoreCoordinator.connectionPool.configuration)
        try await blocker.execute(script: "BEGIN; LOCK TABLE item IN ACCESS EXCLUSIVE MODE")
        let context = container.newBackgroundContext()
        let request = sortedByCreation()
        let result = try await context.perform { () throws in try context.execute(AsynchronousFetchRequest(fetchRequest: request)) }
        return (result, blocker)
    }

    @Test func cancellingAFetchStuckOnTheServerEndsItAtOnce() async throws {
        let (result, blocker) = try await fetchStuckOnTheServer()
        try await Task.sleep(for: .milliseconds(300))
        #expect(!result.isFinished)
        // The fetch ends while the lock is still held (it is released only below): the cancel
        // reached the server. The latency itself is measured by the benchmark (W5).
        result.progress.cancel()
        await #expect(throws: PostgresDataError.self) { try await result.wait() }
        #expect((result.operationError as? PostgresDataError)?.sqlState == "57014")
        try await blocker.execute(script: "ROLLBACK")
        await blocker.close()
    }

    @Test func cancellingTheWaitingTaskCancelsTheFetch() async throws {
        let (result, blocker) = try await fetchStuckOnTheServer()
        let waiter = Task { try await result.wait() }
        try await Task.sleep(for: .milliseconds(200))
        waiter.cancel()
        await #expect(throws: PostgresDataError.self) { try await waiter.value }
        #expect((result.operationError as? PostgresDataError)?.sqlState == "57014" && result.finalResult == nil)
        try await blocker.execute(script: "ROLLBACK")
        await blocker.close()
    }

    @Test func errorsInsideTheCursorBecomeTheOperationError() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 1_000)
        let context = container.newBackgroundContext()
        var request = sortedByCreation()
        request.predicate = try FetchPredicate(format: "weight / (weight - weight) > 1")
        let failing = request
        let result = try await context.perform { () throws in try context.execute(AsynchronousFetchRequest(fetchRequest: failing)) }
        await #expect(throws: PostgresDataError.self) { try await result.wait() }
        #expect((result.operationError as? PostgresDataError)?.sqlState == "22012" && result.finalResult == nil)
        // Dictionaries and counts are refused at once.
        #expect(throws: PostgresDataError.self) {
            try context.performAndWait { () throws in
                _ = try context.execute(AsynchronousFetchRequest(fetchRequest: FetchRequest<[String: AttributeValue]>(entityName: "Item")))
            }
        }
    }

    @Test func pendingChangesAreReflectedAndIDsCanBeFetched() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 50)
        let context = container.newBackgroundContext()
        var request = FetchRequest<Item>(predicate: try FetchPredicate(format: "name BEGINSWITH 'Item 1'"), sortDescriptors: [FetchSortDescriptor(key: "name")])
        request.fetchBatchSize = 4
        let batched = request
        let result = try await context.perform { () throws in
            let inserted = Item(context: context)
            inserted.name = "Item 100 (unsaved)"
            return try context.execute(AsynchronousFetchRequest(fetchRequest: batched))
        }
        try await result.wait()
        let names = await context.perform { result.finalResult?.map { $0.name } ?? [] }
        // Item 1, 10…19 from the store, the unsaved one merged in name order.
        #expect(names == ["Item 1", "Item 10", "Item 100 (unsaved)", "Item 11", "Item 12", "Item 13", "Item 14", "Item 15", "Item 16", "Item 17", "Item 18", "Item 19"])
        let ids = try await context.perform { () throws in
            try context.execute(AsynchronousFetchRequest(fetchRequest: FetchRequest<ManagedObjectID>(entityName: "Item")))
        }
        try await ids.wait()
        #expect(ids.finalResult?.count == 51)
    }

    @Test func walkingBatchesHoldsOneBatchAtATime() async throws {
        let container = try await makeContainer()
        try await seed(container, count: 25_000)
        let context = container.newBackgroundContext()
        var walk = sortedByCreation()
        walk.returnsObjectsAsFaults = false
        let request = walk
        let walked = Locked<(batches: Int, rows: Int, registeredMax: Int, lastName: String?)>((0, 0, 0, nil))
        try await context.enumerateBatches(of: request) { items in
            let registered = context.registeredObjects.count
            walked.withLock { $0 = ($0.batches + 1, $0.rows + items.count, max($0.registeredMax, registered), items.last?.name) }
        }
        let seen = walked.withLock { $0 }
        #expect(seen.batches == 3 && seen.rows == 25_000 && seen.lastName == "Item 25000")
        #expect(seen.registeredMax == 10_000)
        #expect(await context.perform { context.registeredObjects.count } == 0)
        // Cancelling the walking task stops it on the server.
        let walker = Task {
            try await context.enumerateBatches(of: request) { _ in Thread.sleep(forTimeInterval: 0.05) }
        }
        try await Task.sleep(for: .milliseconds(20))
        walker.cancel()
        let error = await captureDataError { try await walker.value }
        #expect(error?.sqlState == "57014")
    }
}
