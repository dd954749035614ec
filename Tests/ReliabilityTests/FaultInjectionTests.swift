import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import PostgresMigrations
import StressWorkload
import Testing

/// Faults caused for real against a real server; after each, the invariant: an error that
/// says what happened, nothing half-written, the context still holding its changes, the
/// pool serving again.
@Suite("Faults: an error, and nothing lost")
struct FaultInjectionTests {
    @Test func aBackendKilledInTheMiddleOfASaveOf10000ObjectsLosesNothing() async throws {
        let stage = try await FaultStage.make()
        // The 5,000th row waits at the gate: half of the save is written, in its transaction.
        let gate = try await stage.closeGate(on: "stress_card", when: "NEW.token = 'card 5000'")
        let context = try await stage.contextWithNewCards(10_000)
        let save = Task { try await context.perform { try context.save() } }
        let pid = try await stage.backendAtTheGate()
        #expect(try await stage.admin.query("SELECT pg_terminate_backend($1)", pid)[0].decode(Bool.self, at: 0))
        try await stage.open(gate)

        let error = await #expect(throws: PostgresDataError.self) { try await save.value }
        #expect(error?.isRetryable == true, "a lost connection is worth retrying: \(String(describing: error))")
        #expect(try await stage.integer("SELECT count(*) FROM stress_card") == 0)
        #expect(await context.perform { context.insertedObjects.count } == 10_000)

        try await context.perform { try context.save() }
        #expect(try await stage.integer("SELECT count(*) FROM stress_card") == 10_000)
        #expect(await context.perform { context.hasChanges } == false)
        #expect(try await stage.sessionsInsideATransaction() == 0)
        await stage.close()
    }

    @Test func aStatementCancelledInsideASaveRollsItBackAndTheConnectionIsReused() async throws {
        let stage = try await FaultStage.make()
        let gate = try await stage.closeGate(on: "stress_card", when: "NEW.token = 'card 50'")
        let context = try await stage.contextWithNewCards(100)
        try await context.perform {
            let counter = try context.fetch(FetchRequest<Counter>(predicate: try FetchPredicate(format: "name == 'hits'")))[0]
            counter.value = 7
        }
        let save = Task { try await context.perform { try context.save() } }
        let pid = try await stage.backendAtTheGate()
        #expect(try await stage.admin.query("SELECT pg_cancel_backend($1)", pid)[0].decode(Bool.self, at: 0))

        let error = await #expect(throws: PostgresDataError.self) { try await save.value }
        #expect(sqlState(of: error) == "57014")
        #expect(try await stage.integer("SELECT count(*) FROM stress_card") == 0)
        #expect(try await stage.integer("SELECT value FROM stress_counter WHERE name = 'hits'") == 0)
        // The cancelled backend lives on, idle, back in the pool.
        #expect(try await stage.integer("SELECT count(*) FROM pg_stat_activity WHERE pid = \(pid) AND state = 'idle'") == 1)
        try await stage.open(gate)
        try await context.perform { try context.save() }
        #expect(try await stage.integer("SELECT count(*) FROM stress_card") == 100)
        #expect(try await stage.integer("SELECT value FROM stress_counter WHERE name = 'hits'") == 7)
        await stage.close()
    }

    @Test func aBatchUpdateWhoseTaskIsCancelledChangesNoRow() async throws {
        let stage = try await FaultStage.make()
        let saver = try await stage.contextWithNewCards(1_000)
        try await saver.perform { try saver.save() }
        let gate = try await stage.closeGate(on: "stress_card", when: "NEW.token = 'card 500'", for: "UPDATE")
        let context = stage.container.newBackgroundContext()
        let update = Task { try await context.execute(BatchUpdateRequest(entity: Card.self, propertiesToUpdate: ["revision": 9])) }
        let pid = try await stage.backendAtTheGate()
        update.cancel()
        let error = await #expect(throws: (any Error).self) { try await update.value }
        #expect(sqlState(of: error) == "57014" || error is CancellationError, "\(String(describing: error))")
        #expect(try await stage.integer("SELECT count(*) FROM stress_card WHERE revision <> 0") == 0)
        #expect(try await stage.integer("SELECT count(*) FROM pg_stat_activity WHERE pid = \(pid) AND state = 'idle'") == 1)
        try await stage.open(gate)
        let result = try await context.execute(BatchUpdateRequest(entity: Card.self, propertiesToUpdate: ["revision": 9]))
        #expect(result.count == 1_000)
        await stage.close()
    }

    @Test func statementAndLockTimeoutsInsideASaveWriteNothing() async throws {
        // Generous: every statement of the store runs under these, loading the store's schema
        // included, on a machine that may be busy (a loaded CI run took 3.8 s to read
        // information_schema.columns).
        let stage = try await FaultStage.make { $0["options"] = "-c statement_timeout=10000 -c lock_timeout=500" }
        // statement_timeout: the 30th card takes a minute to write.
        try await stage.admin.execute(script: """
            CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(60); RETURN NEW; END $$;
            CREATE TRIGGER slow BEFORE INSERT ON stress_card FOR EACH ROW WHEN (NEW.token = 'card 30') EXECUTE FUNCTION slow();
            """)
        let context = try await stage.contextWithNewCards(60)
        let timedOut = await #expect(throws: PostgresDataError.self) { try await context.perform { try context.save() } }
        #expect(sqlState(of: timedOut) == "57014" && "\(timedOut!)".contains("statement timeout"), "\(String(describing: timedOut))")
        try await stage.admin.execute(script: "DROP TRIGGER slow ON stress_card")
        #expect(try await stage.integer("SELECT count(*) FROM stress_card") == 0)

        // lock_timeout: another session holds the counter's row; the save also inserts the 60 cards.
        let holder = try await Connection.connect(stage.configuration)
        try await holder.execute(script: "BEGIN; SELECT * FROM stress_counter WHERE name = 'hits' FOR UPDATE")
        try await context.perform {
            try context.fetch(FetchRequest<Counter>(predicate: try FetchPredicate(format: "name == 'hits'")))[0].value = 5
        }
        let locked = await #expect(throws: PostgresDataError.self) { try await context.perform { try context.save() } }
        #expect(sqlState(of: locked) == "55P03", "\(String(describing: locked))")
        #expect(try await stage.integer("SELECT count(*) FROM stress_card") == 0)
        try await holder.execute(script: "ROLLBACK")
        await holder.close()

        try await context.perform { try context.save() }
        #expect(try await stage.integer("SELECT count(*) FROM stress_card") == 60)
        #expect(try await stage.integer("SELECT value FROM stress_counter WHERE name = 'hits'") == 5)
        await stage.close()
    }

    @Test func aSerializationFailureIsRetryableAndTheRetryHelperRunsTheBlockAgain() async throws {
        let stage = try await FaultStage.make(.init(saveIsolation: .serializable))
        let counterID = try await stage.container.performBackgroundTask { context in
            try context.fetch(FetchRequest<Counter>(predicate: try FetchPredicate(format: "name == 'hits'")))[0].objectID
        }
        // Another transaction updates the row while the save waits for it, then commits.
        let other = try await Connection.connect(stage.configuration)
        try await other.execute(script: "BEGIN; UPDATE stress_counter SET value = value + 100 WHERE name = 'hits'")
        let context = stage.container.newBackgroundContext()
        let runs = Locked(0)
        let errors = Locked<[String]>([])
        let increment = Task {
            try await context.perform(retryingUpTo: 3) {
                runs.withLock { $0 += 1 }
                let counter = try context.existingObject(with: counterID) as! Counter
                counter.value += 1
                do {
                    try context.save()
                } catch {
                    errors.withLock { $0.append((error as? PostgresDataError)?.sqlState ?? "\(error)") }
                    throw error
                }
                return counter.value
            }
        }
        try await stage.untilAStatementWaitsForARowLock()
        try await other.execute(script: "COMMIT")
        await other.close()

        #expect(try await increment.value == 101)
        #expect(runs.withLock { $0 } == 2)
        #expect(errors.withLock { $0 } == ["40001"])
        #expect(try await stage.integer("SELECT value FROM stress_counter WHERE name = 'hits'") == 101)
        await stage.close()
    }

    @Test func aSerializationFailureWithoutTheHelperIsThrownAsRetryable() async throws {
        let stage = try await FaultStage.make(.init(saveIsolation: .serializable))
        let context = stage.container.newBackgroundContext()
        try await context.perform {
            try context.fetch(FetchRequest<Counter>(predicate: try FetchPredicate(format: "name == 'hits'")))[0].value = 1
        }
        let other = try await Connection.connect(stage.configuration)
        try await other.execute(script: "BEGIN; UPDATE stress_counter SET value = 50 WHERE name = 'hits'")
        let save = Task { try await context.perform { try context.save() } }
        try await stage.untilAStatementWaitsForARowLock()
        try await other.execute(script: "COMMIT")
        await other.close()
        let error = await #expect(throws: PostgresDataError.self) { try await save.value }
        #expect(sqlState(of: error) == "40001" && error?.isRetryable == true)
        #expect(try await stage.integer("SELECT value FROM stress_counter WHERE name = 'hits'") == 50)
        #expect(await context.perform { context.hasChanges })
        await stage.close()
    }

    @Test func aDiskFullOrAConstraintErrorInTheMiddleOfAMultiEntitySaveWritesNothing() async throws {
        let stage = try await FaultStage.make()
        // What the server answers when it cannot extend a file, raised by the 40th card.
        try await stage.admin.execute(script: """
            CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'could not extend file "base/16384/16385": No space left on device' USING ERRCODE = 'disk_full'; END $$;
            CREATE TRIGGER full_disk BEFORE INSERT ON stress_card FOR EACH ROW WHEN (NEW.token = 'card 40') EXECUTE FUNCTION full_disk();
            """)
        let context = stage.container.newBackgroundContext()
        try await context.perform {
            let board = Board(context: context)
            board.name = "new board"
            for number in 1...80 {
                let card = Card(context: context)
                card.token = "card \(number)"
                card.title = "title"
                card.board = board
            }
            Label(context: context).name = "new label"
            try context.fetch(FetchRequest<Counter>(predicate: try FetchPredicate(format: "name == 'hits'")))[0].value = 3
        }
        func nothingWritten() async throws {
            #expect(try await stage.integer("SELECT count(*) FROM stress_card") == 0)
            #expect(try await stage.integer("SELECT count(*) FROM stress_board WHERE name = 'new board'") == 0)
            #expect(try await stage.integer("SELECT count(*) FROM stress_label WHERE name = 'new label'") == 0)
            #expect(try await stage.integer("SELECT value FROM stress_counter WHERE name = 'hits'") == 0)
        }
        let full = await #expect(throws: PostgresDataError.self) { try await context.perform { try context.save() } }
        #expect(sqlState(of: full) == "53100" && "\(full!)".contains("No space left on device"))
        try await nothingWritten()
        try await stage.admin.execute(script: "DROP TRIGGER full_disk ON stress_card")

        // A label named like an existing one breaks its unique constraint, after the board and cards.
        await context.perform { Label(context: context).name = "label 1" }
        let duplicate = await #expect(throws: PostgresDataError.self) { try await context.perform { try context.save() } }
        #expect(sqlState(of: duplicate) == "23505" && "\(duplicate!)".contains("name"))
        try await nothingWritten()
        #expect(await context.perform { context.insertedObjects.count } == 83)

        try await context.perform {
            for case let label as Label in context.insertedObjects where label.name == "label 1" { context.delete(label) }
            try context.save()
        }
        #expect(try await stage.integer("SELECT count(*) FROM stress_card") == 80)
        #expect(try await stage.integer("SELECT value FROM stress_counter WHERE name = 'hits'") == 3)
        await stage.close()
    }

    @Test func aServerRestartedUnderTwentyTasksFailsOperationsCleanlyAndThePoolServesAgain() async throws {
        // A cluster of its own: restarting the shared one would break the other suites.
        let server = try TemporaryPostgres.start()
        defer { server.stop() }
        let container = PersistentContainer(name: "Restart", model: StressModel.model)
        try await container.loadPersistentStores(configuration: server.configuration, options: .init(createSchemaIfMissing: true))
        try await StressModel.seed(container)
        // Every save waits on the server for a lock the admin session holds until the restart
        // ends it, so that saves are under way when the server stops however slowly the
        // machine runs the workers (with a 200 ms pause instead, a loaded machine once let
        // the restart fall between two saves).
        let admin = try await Connection.connect(server.configuration)
        try await admin.execute(script: """
            SELECT pg_advisory_lock(42);
            CREATE FUNCTION pause() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock_shared(42); RETURN NEW; END $$;
            CREATE TRIGGER pause BEFORE INSERT ON stress_card FOR EACH ROW EXECUTE FUNCTION pause();
            """)

        struct Outcome: Sendable {
            var saved: [String] = []
            var failed: [String] = []
            var uncertain: [String] = []
            var fetches = 0
            var unexpected: [String] = []
        }
        let outcome = Locked(Outcome())
        let stop = Locked(false)
        let workers = (0..<20).map { worker in
            Task {
                var number = 0
                while !stop.withLock({ $0 }) {
                    number += 1
                    let token = "w\(worker)-\(number)"
                    let context = container.newBackgroundContext()
                    do {
                        if number % 2 == 0 {
                            _ = try await context.perform { try context.count(for: FetchRequest<Card>()) }
                            outcome.withLock { $0.fetches += 1 }
                        } else {
                            try await context.perform {
                                let card = Card(context: context)
                                card.token = token
                                card.title = "during the restart"
                                try context.save()
                            }
                            outcome.withLock { $0.saved.append(token) }
                        }
                    } catch PostgresDataError.commitOutcomeUnknown {
                        // The connection broke while COMMIT ran: the row may or may not be there.
                        outcome.withLock { $0.uncertain.append(token) }
                    } catch let error as PostgresDataError {
                        // A connection error, or the server's "shutting down" / "starting up".
                        let state = error.sqlState ?? ""
                        if case .database(let underlying) = error,
                           [.connectionLost, .connectionFailed].contains(underlying.kind) || state.hasPrefix("57") || state.hasPrefix("08") {
                            outcome.withLock {
                                // A commit whose answer was lost may have happened: its row may or may not be there.
                                if number % 2 == 1 { underlying.kind == .connectionLost ? $0.uncertain.append(token) : $0.failed.append(token) }
                            }
                        } else {
                            outcome.withLock { $0.unexpected.append("\(error)") }
                        }
                    } catch {
                        outcome.withLock { $0.unexpected.append("\(error)") }
                    }
                }
            }
        }
        try await Deadline.poll("a save under way on the server") {
            try await admin.query("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory'")[0]
                .decode(Int64.self, at: 0) > 0
        }
        // pg_ctl blocks: run it on a thread of its own, not on one of Swift's cooperative ones.
        let restarted: Result<Void, any Error> = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Result { try server.restart() }) }
        }
        try restarted.get()
        await admin.close()
        try await Task.sleep(for: .milliseconds(500))
        stop.withLock { $0 = true }
        for worker in workers { await worker.value }

        let result = outcome.withLock { $0 }
        #expect(result.unexpected.isEmpty, "\(result.unexpected.prefix(3))")
        #expect(!result.failed.isEmpty || !result.uncertain.isEmpty,
                "the restart failed no operation (\(result.saved.count) saved, \(result.fetches) fetches)")
        // The pool serves again, in this process: a save and a fetch go through (a dead pooled
        // connection costs at most one retried attempt each).
        let context = container.newBackgroundContext()
        try await context.perform(retryingUpTo: 10) {
            let card = Card(context: context)
            card.token = "after the restart"
            card.title = "after"
            try context.save()
        }
        let stored = Set(try await context.perform(retryingUpTo: 10) { try context.fetch(FetchRequest<Card>()).map(\.token) })
        #expect(stored.contains("after the restart"))
        let lost = result.saved.filter { !stored.contains($0) }
        let phantom = result.failed.filter { stored.contains($0) }
        #expect(lost.isEmpty, "saves that succeeded and are gone: \(lost)")
        #expect(phantom.isEmpty, "saves that failed and were written: \(phantom)")
        #expect(stored.count <= result.saved.count + result.uncertain.count + 1)
        print("RELIABILITY restart: saves \(result.saved.count) ok, \(result.failed.count) failed cleanly, "
              + "\(result.uncertain.count) with the connection lost (committed: \(result.uncertain.filter(stored.contains).count)), "
              + "fetches \(result.fetches) ok, lost 0")
        await container.persistentStoreCoordinator.close()
    }
}

@Suite("Faults: cancelling a migration")
struct MigrationCancellationTests {
    @Test func aMigrationWhoseTaskIsCancelledIsRolledBackAndRunsAgainLater() async throws {
        try await withTemporaryFolder(["0001_slow.sql": """
            -- migrate:up
            CREATE TABLE first_step (x int);
            SELECT pg_sleep(CASE WHEN to_regclass('public.go_on') IS NULL THEN 60 ELSE 0 END);
            CREATE TABLE last_step (x int);
            """]) { try await cancelAndRunAgain(folder: $0) }
    }

    private func cancelAndRunAgain(folder: String) async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_faults")
        let migrator = Migrator(configuration: configuration, directory: try MigrationDirectory(path: folder))
        let admin = try await Connection.connect(configuration)
        func count(_ sql: String) async throws -> Int64 { try await admin.query(sql)[0].decode(Int64.self, at: 0) }

        let run = Task { try await migrator.up() }
        try await Deadline.poll("the migration's sleep") {
            try await count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep(CASE%'") > 0
        }
        run.cancel()
        let error = await #expect(throws: (any Error).self) { try await run.value }
        let state = (error as? MigrationError)?.underlying?.sqlState
        #expect(state == .queryCanceled || error is CancellationError, "\(String(describing: error))")
        #expect(try await count("SELECT count(*) FROM pg_tables WHERE tablename IN ('first_step', 'last_step')") == 0)
        #expect(try await count("SELECT count(*) FROM postgres_data_migrations") == 0)
        // No session is left holding the migration lock (its connection closes as the run ends).
        try await Deadline.poll("the migration lock released") {
            try await count("SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND d.datname = current_database()") == 0
        }

        try await admin.execute(script: "CREATE TABLE go_on ()")
        #expect(try await migrator.up().count == 1)
        #expect(try await count("SELECT count(*) FROM pg_tables WHERE tablename IN ('first_step', 'last_step')") == 2)
        await admin.close()
    }
}
