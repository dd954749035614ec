import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
@testable import PostgresMigrations
import Testing
import TodoExample

/// The runner against a real PostgreSQL: atomicity, refusals, lock timeouts, invalid indexes.
struct MigratorTests {
    static let repositoryMigrations = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../migrations").standardized.path

    /// A fixture with the repository's own migrations/ copied in.
    static func exampleApp() async throws -> MigrationFixture {
        let fixture = try await MigrationFixture.make()
        for name in try FileManager.default.contentsOfDirectory(atPath: repositoryMigrations) where name.hasSuffix(".sql") {
            try FileManager.default.copyItem(atPath: repositoryMigrations + "/" + name, toPath: fixture.folder + "/" + name)
        }
        return fixture
    }

    @Test func aFreshDatabaseIsMigratedAndThenClean() async throws {
        let fixture = try await Self.exampleApp()
        let applied = try await fixture.migrator().up()
        #expect(applied.map(\.version.text) == ["0001", "0002", "0003", "0004"])
        #expect(try await fixture.migrator().status().allSatisfy { $0.state == .applied })
        #expect(try await fixture.migrator().verify().isEmpty)
        #expect(try await fixture.migrator().up().isEmpty)
        let (count, by, complete): (Int64, String, Bool) = try await {
            let connection = try await fixture.connect()
            defer { Task { await connection.close() } }
            return try await connection.query("SELECT count(*), min(applied_by), bool_and(complete) FROM postgres_data_migrations")[0]
                .decode((Int64, String, Bool).self)
        }()
        #expect(count == 4 && complete && by.contains("pid"))
    }

    @Test func downAndUpAgainRoundTrip() async throws {
        let fixture = try await Self.exampleApp()
        try await fixture.migrator().up()
        let reverted = try await fixture.migrator().down(to: MigrationVersion("0001"))
        #expect(reverted.map(\.version.text) == ["0004", "0003", "0002"])
        #expect(try await !fixture.tableExists("team"))
        #expect(try await fixture.tableExists("items"))
        #expect(try await fixture.scalar("SELECT count(*) FROM pg_indexes WHERE indexname = 'items_created_at_idx'", as: Int64.self) == 0)
        try await fixture.migrator().down(to: MigrationVersion("0"))
        #expect(try await !fixture.tableExists("items"))
        #expect(try await fixture.migrator().up().count == 4)
        #expect(try await fixture.migrator().status().allSatisfy { $0.state == .applied })
    }

    @Test func aFailingStatementRollsItsMigrationBackAndNamesFileAndLine() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_ok.sql": "-- migrate:up\nCREATE TABLE kept (x int);\n",
            "0002_broken.sql": """
                -- migrate:up
                CREATE TABLE half (x int);
                INSERT INTO half VALUES (1);
                INSERT INTO half
                    SELECT nonexistent FROM half;
                CREATE TABLE never (x int);
                """,
        ])
        await #expect {
            try await fixture.migrator().up()
        } throws: { error in
            guard case .statementFailed(let file, let line, _, let underlying)? = error as? MigrationError else { return false }
            return file == "0002_broken.sql" && line == 5 && underlying.sqlState == .undefinedColumn
                && "\(error)".hasPrefix("0002_broken.sql:5: column \"nonexistent\" does not exist (SQLSTATE 42703)")
        }
        #expect(try await fixture.tableExists("kept"))
        #expect(try await !fixture.tableExists("half"))
        #expect(try await fixture.migrator().status().map(\.state) == [.applied, .pending])
    }

    @Test func transactionControlInATransactionalMigrationIsRefused() async throws {
        let fixture = try await MigrationFixture.make(["0001_a.sql": "-- migrate:up\nBEGIN;\nCREATE TABLE t (x int);\nCOMMIT;\n"])
        await #expect { try await fixture.migrator().up() } throws: { "\($0)".hasPrefix("0001_a.sql:2: BEGIN, COMMIT and ROLLBACK") }
        #expect(try await !fixture.tableExists("t"))
    }

    @Test func editedAndOutOfOrderFilesAreRefused() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_a.sql": "-- migrate:up\nCREATE TABLE a (x int);\n",
            "0003_c.sql": "-- migrate:up\nCREATE TABLE c (x int);\n",
        ])
        try await fixture.migrator().up()
        // Line endings and trailing spaces are not edits.
        try fixture.write("0001_a.sql", "-- migrate:up\r\nCREATE TABLE a (x int);   \r\n\r\n")
        #expect(try await fixture.migrator().up().isEmpty)

        try fixture.write("0002_b.sql", "-- migrate:up\nCREATE TABLE b (x int);\n")
        await #expect { try await fixture.migrator().up() } throws: {
            "\($0)".contains("0002_b.sql has a version lower than 0003") && "\($0)".contains("--allow-out-of-order")
        }
        #expect(try await !fixture.tableExists("b"))
        #expect(try await fixture.migrator { $0.allowOutOfOrder = true }.up().map(\.version.text) == ["0002"])

        try fixture.write("0001_a.sql", "-- migrate:up\nCREATE TABLE a (x bigint);\n")
        await #expect { try await fixture.migrator().up() } throws: { error in
            guard case .edited(let file, _, let recorded, let current)? = error as? MigrationError else { return false }
            return file == "0001_a.sql" && recorded != current && "\(error)".contains(recorded.text) && "\(error)".contains(current.text)
        }
        #expect(try await fixture.migrator().status().first?.state == .edited)
        #expect(try await fixture.migrator().verify().first?.contains("0001_a.sql: edited after it was applied") == true)
        #expect(try await fixture.migrator().repair().map(\.text) == ["0001"])
        #expect(try await fixture.migrator().verify().isEmpty)
    }

    @Test func aLockTimeoutIsRetriedReportsTheBlockerAndSucceedsOnceReleased() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_table.sql": "-- migrate:up\nCREATE TABLE busy (x int);\n",
            // Long enough for the blocker watch to look a few times on a loaded machine.
            "0002_alter.sql": "-- migrate:lock-timeout 2s\n-- migrate:up\nALTER TABLE busy ADD COLUMN y int;\n",
        ])
        try await fixture.migrator().up(to: MigrationVersion("0001"))
        let blocker = try await fixture.connect()
        try await blocker.execute(script: "BEGIN; SELECT * FROM busy;")
        await #expect {
            try await fixture.migrator { $0.lockRetries = 1 }.up()
        } throws: { error in
            guard case .lockTimeout(let file, let line, let attempts, let blockers, let underlying)? = error as? MigrationError else { return false }
            return file == "0002_alter.sql" && line == 3 && attempts == 2 && underlying.sqlState == .lockNotAvailable
                && blockers.map(\.pid) == [blocker.backendPID] && blockers[0].state == "idle in transaction"
                && "\(error)".contains("pid \(blocker.backendPID)") && "\(error)".contains("SELECT * FROM busy")
        }
        // Released during the retries, once a retry event names the blocker (an attempt on a
        // loaded machine may end before the watch first looks): the migration goes through.
        let events = Locked<[MigrationEvent]>([])
        let release = Task {
            try await Deadline.poll("a retry event naming the blocker") {
                events.withLock { $0.contains { if case .retrying(_, _, _, let b) = $0 { b.first?.pid == blocker.backendPID } else { false } } }
            }
            try await blocker.execute(script: "COMMIT")
        }
        try await fixture.migrator({ $0.lockRetries = 100 }, events: events).up()
        try await release.value
        await blocker.close()
        #expect(try await fixture.scalar("SELECT count(*) FROM information_schema.columns WHERE table_name = 'busy' AND column_name = 'y'", as: Int64.self) == 1)
    }

    @Test func losingTheMigrationLockStopsTheRunBeforeTheNextStatement() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_steps.sql": "-- migrate:no-transaction\n-- migrate:up\nSELECT pg_advisory_xact_lock(4242);\nCREATE TABLE after_gate (x int);\n",
        ])
        // The first statement waits for a lock the test holds; meanwhile the migration lock's backend is terminated.
        let gate = try await fixture.connect()
        try await gate.query("SELECT pg_advisory_lock(4242)")
        let run = Task { try await fixture.migrator().up() }
        try await Deadline.poll("the migration's first statement waiting on the test's lock") {
            try await gate.query("""
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'SELECT pg_advisory_xact_lock(4242)%'
                """)[0].decode(Int64.self, at: 0) > 0
        }
        let terminated = try await gate.query("""
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'postgres-data lock'
            """)
        #expect(terminated.count == 1)
        try await gate.query("SELECT pg_advisory_unlock(4242)")
        await gate.close()
        await #expect { try await run.value } throws: { error in
            if case .migrationLockLost? = error as? MigrationError { return true }
            return false
        }
        #expect(try await !fixture.tableExists("after_gate"))
        #expect(try await fixture.migrator().up().count == 1)
        #expect(try await fixture.tableExists("after_gate"))
    }

    @Test func anInvalidIndexLeftByConcurrentlyIsDetectedAndDropped() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_table.sql": "-- migrate:up\nCREATE TABLE dup (x int);\nINSERT INTO dup VALUES (1), (1);\n",
            "0002_unique.sql": "-- migrate:no-transaction\n-- migrate:up\nCREATE UNIQUE INDEX CONCURRENTLY dup_x_key ON dup (x);\n",
        ])
        await #expect { try await fixture.migrator().up() } throws: { error in
            guard case .invalidIndex(let file, let line, let indexes, let underlying)? = error as? MigrationError else { return false }
            return file == "0002_unique.sql" && line == 3 && indexes == ["public.dup_x_key"] && underlying?.sqlState == .uniqueViolation
        }
        #expect(try await fixture.scalar("SELECT count(*) FROM pg_class WHERE relname = 'dup_x_key'", as: Int64.self) == 0)
        #expect(try await fixture.migrator().status().last?.state == .partial)
        // Fixed data: the re-run resumes the file and builds a valid index.
        let connection = try await fixture.connect()
        try await connection.execute(script: "DELETE FROM dup WHERE ctid = (SELECT max(ctid) FROM dup)")
        await connection.close()
        try await fixture.migrator().up()
        #expect(try await fixture.scalar("SELECT bool_and(indisvalid) FROM pg_index WHERE indexrelid = 'dup_x_key'::regclass", as: Bool.self))
        #expect(try await fixture.migrator().verify().isEmpty)
    }

    /// A killed `CREATE INDEX CONCURRENTLY IF NOT EXISTS` leaves its index invalid; the
    /// re-run builds it again instead of taking the invalid one as done.
    @Test func aReRunOfAConcurrentIndexLeftInvalidBuildsItAgain() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_table.sql": "-- migrate:up\nCREATE TABLE stale (x int);\nINSERT INTO stale VALUES (1), (1);\n",
            "0002_unique.sql": "-- migrate:no-transaction\n-- migrate:up\nCREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS stale_x_key ON stale (x);\n",
        ])
        try await fixture.migrator().up(to: MigrationVersion("0001"))
        // What a run killed in the middle of the build leaves: the index, invalid.
        let connection = try await fixture.connect()
        await #expect(throws: PostgresError.self) { try await connection.execute(script: "CREATE UNIQUE INDEX CONCURRENTLY stale_x_key ON stale (x)") }
        try await connection.execute(script: "DELETE FROM stale WHERE ctid = (SELECT max(ctid) FROM stale)")
        await connection.close()
        #expect(try await fixture.scalar("SELECT bool_and(NOT indisvalid) FROM pg_index WHERE indexrelid = 'stale_x_key'::regclass", as: Bool.self))
        try await fixture.migrator().up()
        #expect(try await fixture.scalar("SELECT bool_and(indisvalid) FROM pg_index WHERE indexrelid = 'stale_x_key'::regclass", as: Bool.self))
        #expect(try await fixture.migrator().verify().isEmpty)
    }

    /// A concurrent index build waiting behind an open transaction until `lock_timeout` is a
    /// lock timeout (file, line, blockers, retried), not a bare error; the next run builds it.
    @Test func aConcurrentIndexTimingOutBehindATransactionIsALockTimeoutAndTheNextRunBuildsIt() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_table.sql": "-- migrate:up\nCREATE TABLE waits (x int);\nINSERT INTO waits SELECT generate_series(1, 100);\n",
            "0002_index.sql": "-- migrate:no-transaction\n-- migrate:lock-timeout 300ms\n-- migrate:up\nCREATE INDEX CONCURRENTLY IF NOT EXISTS waits_x_idx ON waits (x);\n",
        ])
        try await fixture.migrator().up(to: MigrationVersion("0001"))
        let blocker = try await fixture.connect()
        try await blocker.execute(script: "BEGIN; INSERT INTO waits VALUES (0);")
        await #expect {
            try await fixture.migrator { $0.lockRetries = 1; $0.retryDelay = .milliseconds(50) }.up()
        } throws: { error in
            guard case .lockTimeout(let file, let line, let attempts, _, let underlying)? = error as? MigrationError else { return false }
            return file == "0002_index.sql" && line == 4 && attempts == 2 && underlying.sqlState == .lockNotAvailable
        }
        try await blocker.execute(script: "COMMIT")
        await blocker.close()
        try await fixture.migrator().up()
        #expect(try await fixture.scalar("SELECT bool_and(indisvalid) FROM pg_index WHERE indexrelid = 'waits_x_idx'::regclass", as: Bool.self))
        #expect(try await fixture.migrator().verify().isEmpty)
    }

    /// Another session building an index on another table meanwhile: the guard drops only the
    /// index its own statement left invalid, and the other build completes.
    @Test func theInvalidIndexGuardTouchesOnlyItsOwnStatementsIndex() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_tables.sql": """
                -- migrate:up
                CREATE FUNCTION slow_identity(int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM pg_sleep(0.002); RETURN $1; END $$;
                CREATE TABLE theirs (x int);
                INSERT INTO theirs SELECT generate_series(1, 1500);
                CREATE TABLE ours (x int);
                INSERT INTO ours VALUES (1), (1);
                """,
            "0002_unique.sql": "-- migrate:no-transaction\n-- migrate:up\nCREATE UNIQUE INDEX CONCURRENTLY ours_x_key ON ours (x);\n",
        ])
        try await fixture.migrator().up(to: MigrationVersion("0001"))
        let other = try await fixture.connect()
        let building = Task { try await other.execute(script: "CREATE INDEX CONCURRENTLY theirs_slow_idx ON theirs (slow_identity(x))") }
        try await Deadline.poll("the other session's index build under way") {
            try await fixture.scalar("SELECT count(*) FROM pg_stat_progress_create_index", as: Int64.self) > 0
        }
        await #expect { try await fixture.migrator().up() } throws: { error in
            guard case .invalidIndex(_, _, let indexes, _)? = error as? MigrationError else { return false }
            return indexes == ["public.ours_x_key"]
        }
        _ = try await building.value
        await other.close()
        #expect(try await fixture.scalar("SELECT bool_and(indisvalid) FROM pg_index WHERE indexrelid = 'theirs_slow_idx'::regclass", as: Bool.self))
        #expect(try await fixture.scalar("SELECT count(*) FROM pg_class WHERE relname = 'ours_x_key'", as: Int64.self) == 0)
    }

    @Test func baselineAdoptsAnExistingDatabase() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_a.sql": "-- migrate:up\nCREATE TABLE a (x int);\n",
            "0002_b.sql": "-- migrate:up\nCREATE TABLE b (x int);\n",
            "0003_c.sql": "-- migrate:up\nCREATE TABLE c (x int);\n",
        ])
        let connection = try await fixture.connect()
        try await connection.execute(script: "CREATE TABLE a (x int); CREATE TABLE b (x int);")
        await connection.close()
        try await fixture.migrator().baseline(MigrationVersion("0002")!)
        #expect(try await fixture.migrator().status().map(\.state) == [.baseline, .baseline, .pending])
        #expect(try await fixture.migrator().up().map(\.version.text) == ["0003"])
        await #expect { try await fixture.migrator().baseline(MigrationVersion("0003")!) } throws: { "\($0)".contains("baseline refused") }
    }

    @Test func diffTakesAnEmptyOrPartlyMigratedDatabaseToTheModel() async throws {
        let fixture = try await Self.exampleApp()
        let target = todoModel.schemaDescription
        // Empty database: the whole schema.
        let empty = SchemaDiff(from: try await fixture.migrator().liveSchema(), to: target)
        #expect(empty.statements.filter { $0.hasPrefix("CREATE TABLE") }.count == 6)
        let scratch = try await MigrationFixture.make()
        let connection = try await scratch.connect()
        for statement in empty.statements { try await connection.execute(script: statement) }
        // The persistent-history tables a store creates are the library's, never a drop to propose.
        try await connection.execute(script: """
            CREATE TABLE postgres_data_history_transaction (id bigint PRIMARY KEY);
            CREATE TABLE postgres_data_history_change (transaction_id bigint);
            """)
        await connection.close()
        #expect(SchemaDiff(from: try await scratch.migrator().liveSchema(), to: target, includeDrops: true).isEmpty)

        // Partly migrated: only the missing index.
        try await fixture.migrator().up(to: MigrationVersion("0003"))
        let partial = SchemaDiff(from: try await fixture.migrator().liveSchema(), to: target)
        #expect(partial.statements == [#"CREATE INDEX "items_created_at_idx" ON "items" ("created_at")"#])
        // The migrations folder builds exactly the model's schema.
        try await fixture.migrator().up()
        let done = SchemaDiff(from: try await fixture.migrator().liveSchema(), to: target)
        #expect(done.isEmpty, "\(done.statements)")
        #expect(done.notes.isEmpty, "\(done.notes)")
    }

    @Test func aColumnOfAnotherTypeOrNullabilityIsAltered() async throws {
        let fixture = try await MigrationFixture.make()
        let connection = try await fixture.connect()
        try await connection.execute(script: """
            CREATE TABLE choice (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, name varchar(20), weight bigint NOT NULL DEFAULT 0, legacy text)
            """)
        await connection.close()
        let model = SchemaDescription(tables: [try #require(todoModel.schemaDescription.table(named: "choice"))])
        let diff = SchemaDiff(from: try await fixture.migrator().liveSchema(), to: model)
        #expect(diff.statements == [
            #"ALTER TABLE "choice" ALTER COLUMN "name" TYPE text USING "name"::text"#,
            #"ALTER TABLE "choice" ALTER COLUMN "name" SET NOT NULL"#,
            #"ALTER TABLE "choice" ALTER COLUMN "weight" TYPE integer USING "weight"::integer"#,
            #"ALTER TABLE "choice" ADD CONSTRAINT "choice_weight_min" CHECK ("weight" >= 0)"#,
        ])
        #expect(diff.notes == [#"column "choice"."legacy" is not in the model (ALTER TABLE "choice" DROP COLUMN "legacy")"#])
        #expect(SchemaDiff(from: try await fixture.migrator().liveSchema(), to: model, includeDrops: true).statements.contains(
            #"ALTER TABLE "choice" DROP COLUMN "legacy""#))
    }
}
