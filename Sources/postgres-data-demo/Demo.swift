import Foundation
import PostgresClient
import PostgresData
import TodoExample

/// The seeds' story on many to-do items, step by step, through PostgresData's public API only.
/// It runs on the main actor, the queue of the container's view context.
@MainActor
struct Demo {
    let database: DemoDatabase
    let rowCount: Int
    let container = PersistentContainer(name: "Todo", model: todoModel)
    let saveSize = 10_000
    let batchSize = 10_000

    var view: ManagedObjectContext { container.viewContext }

    func run() async throws {
        try await step("Applying migrations/ with `postgres-data up`") {
            try database.migrate()
            // No createSchemaIfMissing: loading checks that the migrated schema is the model's.
            try await container.loadPersistentStores(configuration: database.configuration)
            print("  ✓ the migrated schema matches the model")
        }
        try await step("1. Importing \(rowCount.formatted()) items in a private-queue context, a save per \(saveSize.formatted())") {
            try await importItems()
        }
        try await step("2. Fetching them asynchronously, sorted by createdAt, \(batchSize.formatted()) per batch") {
            try await fetchAsynchronously()
        }
        try await step("3. A batch update sets every weight to 1 and returns the object IDs") {
            try await batchUpdate()
        }
        try await step("4. Cancelling asynchronous fetches mid-way") {
            try await cancelFetches()
        }
        try await step("5. Two contexts edit the same item: a merge conflict") {
            try await mergeConflict()
        }
    }

    private func step(_ title: String, _ body: () async throws -> Void) async throws {
        print("\n• \(title)")
        let start = ContinuousClock.now
        try await body()
        print("  (step took \(ProgressBar.format(ContinuousClock.now - start)), peak memory \(peakMemoryMiB()) MiB)")
    }

    // MARK: 1. Import with did-save merges into the main context

    private func importItems() async throws {
        // The main context shows an item the import's first save edits; each did-save merges in.
        let welcome = try view.performAndWait { () throws in
            let item = TodoItem(context: view)
            item.name = "Welcome to PostgresData"
            item.createdAt = Date(timeIntervalSince1970: 0)
            try view.save()
            return item
        }
        let background = container.newBackgroundContext()
        background.name = "import"
        let merges = Locked(0)
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveObjectsNotification, object: background, queue: nil) { [view] note in
            guard let payload = note.userInfo?["changes"] as? ContextDidSave else { return }
            Task { @MainActor in
                view.mergeChanges(fromContextDidSave: payload)
                merges.withLock { $0 += 1 }
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }

        let welcomeID = welcome.objectID
        let start = Date()
        var bar = ProgressBar("import", total: rowCount)
        var imported = 0
        while imported < rowCount {
            let first = imported
            let count = min(saveSize, rowCount - first)
            try await background.perform { () throws in
                if first == 0, let welcome = try background.existingObject(with: welcomeID) as? TodoItem {
                    welcome.done = true
                }
                for index in first..<first + count {
                    let item = TodoItem(context: background)
                    item.name = "Item \(index + 1)"
                    item.createdAt = start.addingTimeInterval(Double(index) / 1000)
                    item.done = index % 4 == 0
                    item.weight = Int32(index % 10)
                }
                try background.save()
                background.reset()  // the saved objects leave memory
            }
            imported += count
            bar.update(imported, detail: "· save \(imported / saveSize) · main context merged \(merges.withLock { $0 })")
        }
        let saves = (rowCount + saveSize - 1) / saveSize
        while merges.withLock({ $0 }) < saves { await Task.yield() }
        bar.finish("imported \(imported.formatted()) items in \(saves) saves; the main context merged all \(saves) did-saves")
        print("  ✓ main context: “\(welcome.name)” done = \(welcome.done) (set by the import's first save, merged in)")
        try await database.analyze()
    }

    // MARK: 2. Asynchronous fetch with progress per batch

    private func fetchAsynchronously() async throws {
        let reader = container.newBackgroundContext()
        var request = FetchRequest<TodoItem>(sortDescriptors: [FetchSortDescriptor(key: "createdAt")])
        request.fetchBatchSize = batchSize
        let summary = Locked<String?>(nil)
        var asynchronous = AsynchronousFetchRequest(fetchRequest: request) { result in
            // On the reader's queue, as Core Data runs the completion block.
            let items = result.finalResult ?? []
            let ordered = zip(items, items.dropFirst()).allSatisfy { $0.createdAt <= $1.createdAt }
            summary.withLock { $0 = "\(items.count.formatted()) managed objects, \(ordered ? "in createdAt order" : "OUT OF ORDER"), first “\(items.first?.name ?? "-")”" }
        }
        let terminal = ProgressBar.isTerminal
        asynchronous.progressHandler = { update in
            guard !update.isFinished else { return }
            let line = "  \(update.rowCount.formatted()) records fetched (batch \(update.batchCount), \(ProgressBar.format(update.elapsed)))"
            if terminal {
                print("\r\(line)   ", terminator: "")
                fflush(nil)
            } else {
                print(line)
            }
        }
        let started = asynchronous
        let result = try await reader.perform { () throws in try reader.execute(started) }
        // Between batches the context is free: another block runs on its queue.
        var updates = result.progressUpdates().makeAsyncIterator()
        _ = await updates.next()
        let doneCount = try await reader.perform { () throws in
            try reader.count(for: FetchRequest<TodoItem>(predicate: try FetchPredicate(format: "done == YES")))
        }
        if terminal { print("\r  (meanwhile, on the same context's queue: count(for: done == YES) = \(doneCount.formatted()))") }
        try await result.wait()
        if terminal { print("") }
        if !terminal { print("  (meanwhile, on the same context's queue: count(for: done == YES) = \(doneCount.formatted()))") }
        print("  ✓ completion block: \(summary.withLock { $0 } ?? "not run")")
        await reader.perform { reader.reset() }
    }

    // MARK: 3. Batch update merged into the main context

    private func batchUpdate() async throws {
        var sevens = FetchRequest<TodoItem>(predicate: try FetchPredicate(format: "weight == %@", 7),
                                            sortDescriptors: [FetchSortDescriptor(key: "createdAt")])
        sevens.fetchLimit = 1
        let stale = try view.performAndWait { () throws in try view.fetch(sevens)[0] }
        print("  main context holds “\(stale.name)” with weight \(stale.weight)")

        let writer = container.newBackgroundContext()
        var update = BatchUpdateRequest(entity: TodoItem.self, propertiesToUpdate: ["weight": 1])
        update.resultType = .updatedObjectIDs
        let start = ContinuousClock.now
        let result = try await writer.execute(update)
        print("  ✓ one UPDATE … RETURNING id changed \(result.objectIDs.count.formatted()) rows in \(ProgressBar.format(ContinuousClock.now - start))")
        print("  main context before merging: weight \(stale.weight) (stale: a batch update bypasses contexts)")
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: [.updated: Set(result.objectIDs)], into: [view])
        print("  ✓ after mergeChanges(fromRemoteContextSave:into:): weight \(stale.weight) (refreshed from the database)")
    }

    // MARK: 4. Cancellation

    private func cancelFetches() async throws {
        let pool = try container.persistentStoreCoordinator.connectionPool
        let openBefore = pool.statistics.open
        let reader = container.newBackgroundContext()
        var latencies: [Duration] = []
        var rowsAtCancel: [Int] = []
        for _ in 0..<10 {
            var request = FetchRequest<TodoItem>(sortDescriptors: [FetchSortDescriptor(key: "createdAt")])
            request.fetchBatchSize = batchSize
            let started = AsynchronousFetchRequest(fetchRequest: request)
            let result = try await reader.perform { () throws in try reader.execute(started) }
            // Mid-way: once three batches have arrived, as a user would press cancel.
            for await update in result.progressUpdates() where update.batchCount >= 3 || update.isFinished { break }
            let cancelledAt = ContinuousClock.now
            result.cancel()
            do {
                try await result.wait()
                throw DemoError("the fetch ended before it could be cancelled (too few rows? DEMO_ROWS=\(rowCount))")
            } catch let error as PostgresDataError where error.sqlState == "57014" {
                latencies.append(.now - cancelledAt)
                rowsAtCancel.append(Int(result.progress.completedUnitCount))
                guard result.finalResult == nil else { throw DemoError("a cancelled fetch delivered a final result") }
            }
        }
        latencies.sort()
        print("  ✓ 10 fetches cancelled after ~\(rowsAtCancel.min()!.formatted()) of \(rowCount.formatted()) rows: SQLSTATE 57014, no final result; "
              + "cancel → end median \(ProgressBar.format(latencies[latencies.count / 2])), worst \(ProgressBar.format(latencies.last!))")
        // The same pooled connections serve the next fetch; none is left inside a transaction.
        var next = FetchRequest<TodoItem>(sortDescriptors: [FetchSortDescriptor(key: "createdAt")])
        next.fetchLimit = 10_000
        let nextRequest = next
        let fetched = try await reader.perform { () throws in try reader.fetch(nextRequest).count }
        let openAfter = pool.statistics.open
        let inTransaction = try await database.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'")
        print("  ✓ the next fetch returned \(fetched.formatted()) items; pool connections open before \(openBefore), after \(openAfter); sessions idle in a transaction: \(inTransaction)")
    }

    // MARK: 5. Merge conflict

    private func mergeConflict() async throws {
        var first = FetchRequest<TodoItem>(sortDescriptors: [FetchSortDescriptor(key: "createdAt")])
        first.fetchLimit = 1
        first.predicate = try FetchPredicate(format: "name BEGINSWITH %@", "Item ")
        let id = try view.performAndWait { () throws in try view.fetch(first)[0].objectID }
        let alice = container.newBackgroundContext()
        let bob = container.newBackgroundContext()
        alice.name = "alice"
        bob.name = "bob"
        // Both read the item, then alice saves first.
        for context in [alice, bob] {
            _ = try await context.perform { () throws in (try context.existingObject(with: id) as? TodoItem)?.name }
        }
        try await alice.perform { () throws in
            let item = try alice.existingObject(with: id) as! TodoItem
            item.name = "Call the plumber"
            item.done = true
            try alice.save()
        }
        print("  alice saved: name “Call the plumber”, done = true")
        let conflict = await bob.perform { () -> String? in
            let item = try? bob.existingObject(with: id) as? TodoItem
            item?.name = "Call the electrician"
            item?.weight = 5
            do {
                try bob.save()
                return nil
            } catch {
                return "\(error)"
            }
        }
        guard let conflict else { throw DemoError("bob's save did not conflict") }
        print("  bob's save with the `error` merge policy fails, nothing written:")
        print(conflict.split(separator: "\n").map { "    \($0)" }.joined(separator: "\n"))
        try await bob.perform { () throws in
            bob.mergePolicy = .mergeByPropertyObjectTrump
            try bob.save()
        }
        let row = try await database.scalar("SELECT name || ', done = ' || done || ', weight = ' || weight FROM items WHERE id = $1", id.primaryKey ?? 0)
        print("  ✓ with mergeByPropertyObjectTrump bob's save goes through; the row: \(row)")
        print("    (bob's name and weight win; alice's done = true is kept)")
    }
}
