import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
@testable import PostgresMigrations
import Testing
import TodoExample

/// The `postgres-data` binary, run as a subprocess: concurrency between processes, a killed
/// run, JSON output and exit codes.
struct ToolTests {
    @Test func twoProcessesRunningUpTogetherApplyEachMigrationOnce() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_log.sql": "-- migrate:up\nCREATE TABLE runs (migration text);\nINSERT INTO runs VALUES ('0001');\n",
            "0002_slow.sql": "-- migrate:up\nSELECT pg_sleep(0.5);\nINSERT INTO runs VALUES ('0002');\n",
            "0003_more.sql": "-- migrate:up\nCREATE TABLE more (x int);\nINSERT INTO runs VALUES ('0003');\n",
        ])
        let url = fixture.database.url(redactingPassword: false)
        let first = try ToolRun.start(["up", "--dir", fixture.folder], databaseURL: url)
        let second = try ToolRun.start(["up", "--dir", fixture.folder], databaseURL: url)
        let (a, b) = (await first.finish(), await second.finish())
        #expect(a.status == 0, "\(a.errors)")
        #expect(b.status == 0, "\(b.errors)")
        #expect(try await fixture.scalar("SELECT string_agg(migration, ',' ORDER BY migration) FROM runs", as: String.self) == "0001,0002,0003")
        #expect(try await fixture.scalar("SELECT count(*) FROM postgres_data_migrations", as: Int64.self) == 3)
        // One of them applied everything, the other found nothing left to do.
        #expect([a.output, b.output].filter { $0.contains("3 migrations applied") }.count == 1)
        #expect([a.output, b.output].filter { $0.contains("nothing to apply") }.count == 1)
    }

    @Test func aKilledRunOfANonTransactionalFileResumesAfterItsLastStatement() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_steps.sql": """
                -- migrate:no-transaction
                -- migrate:up
                CREATE TABLE step_one (x int);
                SELECT pg_sleep(CASE WHEN to_regclass('resume_now') IS NULL THEN 60 ELSE 0 END);
                CREATE TABLE step_three (x int);
                """,
        ])
        let run = try ToolRun.start(["up", "--dir", fixture.folder], databaseURL: fixture.database.url(redactingPassword: false))
        let observer = try await fixture.connect()
        // Wait until the first statement is recorded and the second is sleeping, then kill the tool.
        try await Deadline.poll("the tool's second statement", interval: .milliseconds(50)) {
            try #require(run.isRunning, "the tool ended before its second statement")
            return try await observer.query("""
                SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep(CASE%'
                """)[0].decode(Int64.self, at: 0) > 0
        }
        run.kill()
        _ = await run.finish()
        let (killedAt, killedComplete) = try await observer.query("SELECT statements_applied, complete FROM postgres_data_migrations")[0]
            .decode((Int32?, Bool).self)
        #expect(killedAt == 1 && !killedComplete)
        #expect(try await fixture.migrator().status().first?.state == .partial)
        try await observer.execute(script: "CREATE TABLE resume_now ()")

        let events = Locked<[MigrationEvent]>([])
        try await fixture.migrator(events: events).up()
        let resumedAt = events.withLock { $0.compactMap { event -> Int? in if case .started(_, _, _, let at) = event { at } else { nil } } }
        #expect(resumedAt == [1])
        let (doneAt, complete) = try await observer.query("SELECT statements_applied, complete FROM postgres_data_migrations")[0]
            .decode((Int32?, Bool).self)
        #expect(doneAt == 3 && complete)
        #expect(try await fixture.tableExists("step_three"))
        // The orphaned statement of the killed run was cancelled by the server, not left sleeping.
        var orphans: Int64 = 1
        for _ in 0..<100 where orphans > 0 {
            orphans = try await observer.query("""
                SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep(CASE%' AND pid <> pg_backend_pid()
                """)[0].decode(Int64.self, at: 0)
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(orphans == 0)
        await observer.close()
    }

    @Test func jsonOutputParsesBackAndExitCodesFollowTheDocumentation() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_a.sql": "-- migrate:up\nCREATE TABLE a (x int);\n-- migrate:down\nDROP TABLE a;\n",
            "0002_b.sql": "-- migrate:up\nCREATE TABLE b (x int);\n-- migrate:down\nDROP TABLE b;\n",
        ])
        let pending = try await fixture.tool(["status", "--exit-code"])
        #expect(pending.status == 3)
        #expect(pending.output.contains("pending      0001_a.sql"))

        let up = try await fixture.tool(["up", "--json"])
        #expect(up.status == 0, "\(up.errors)")
        struct Report: Decodable { var direction: String; var migrations: [[String: String]] }
        let report = try JSONDecoder().decode(Report.self, from: Data(up.output.utf8))
        #expect(report.direction == "up" && report.migrations.map { $0["file"] } == ["0001_a.sql", "0002_b.sql"])

        let status = try await fixture.tool(["status", "--json", "--exit-code"])
        #expect(status.status == 0)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let statuses = try decoder.decode([MigrationStatus].self, from: Data(status.output.utf8))
        #expect(statuses.map(\.state) == [.applied, .applied])
        #expect(statuses[0].applied?.checksum == statuses[0].checksum)
        // Durations are numbers of milliseconds, not a Duration's [seconds, attoseconds].
        #expect(status.output.contains("\"durationMilliseconds\" : ") && !status.output.contains("\"duration\" : ["))

        let plan = try await fixture.tool(["plan", "--down", "--json"])
        #expect(plan.status == 0 && plan.output.contains("DROP TABLE b;") && !plan.output.contains("DROP TABLE a;"))

        try fixture.write("0001_a.sql", "-- migrate:up\nCREATE TABLE a (x bigint);\n")
        let edited = try await fixture.tool(["up", "--json"])
        #expect(edited.status == 2)
        struct Failure: Decodable { var error: Body; struct Body: Decodable { var message: String; var exitCode: Int } }
        let error = try JSONDecoder().decode(Failure.self, from: Data(edited.output.utf8))
        #expect(error.error.message.contains("0001_a.sql: migration 0001 was applied with checksum"))
        #expect(error.error.exitCode == 2, "the exit code is a number, as the process's")
        #expect(try await fixture.tool(["verify"]).status == 3)

        let failing = try await ToolRun.run(["up", "--dir", fixture.folder + "/missing"], databaseURL: fixture.database.url(redactingPassword: false))
        #expect(failing.status == 2 && failing.errors.contains("cannot read the migrations folder"))
        let usage = try await fixture.tool(["down", "--steps", "0"])
        #expect(usage.status == 64)
        // Arguments found wrong while running are usage errors too.
        for arguments in [["up", "--to", "abc"], ["baseline", "abc"], ["plan", "--to", "x1"], ["up", "--lock-timeout", "5x"]] {
            let run = try await fixture.tool(arguments)
            #expect(run.status == 64, "\(arguments): \(run.status) \(run.errors)")
        }
        let version = try await ToolRun.run(["--version"], databaseURL: "")
        #expect(version.status == 0 && version.output.hasPrefix("0."))
        let missing = try await fixture.tool(["lint", fixture.folder + "/nope.sql"])
        #expect(missing.errors.contains("no such file") && !missing.errors.contains("UTF-8"))
        let badURL = try await ToolRun.run(["status", "--dir", fixture.folder, "--database-url", "postgres://app:s3cret-pass@localhost:99999/x"],
                                           databaseURL: "")
        #expect(badURL.status == 64 && badURL.errors.contains("invalid port") && !badURL.errors.contains("s3cret-pass"))
    }

    @Test func diffWithAnExportedModelIsEmptyOnceTheMigrationsAreApplied() async throws {
        let fixture = try await MigratorTests.exampleApp()
        let modelFile = fixture.folder + "/model.json"
        try todoModel.schemaJSON().write(to: URL(fileURLWithPath: modelFile))
        let before = try await fixture.tool(["diff", "--model", modelFile, "--exit-code"])
        #expect(before.status == 3)
        #expect(before.output.contains(#"CREATE TABLE "items""#))
        #expect(try await fixture.tool(["up"]).status == 0)
        let after = try await fixture.tool(["diff", "--model", modelFile, "--exit-code"])
        #expect(after.status == 0, "\(after.output)")
        #expect(after.output.contains("the schemas are the same"))
        #expect(after.output.hasSuffix("\n"))
        // --write into a folder that does not exist yet creates it.
        let fresh = fixture.folder + "/new-migrations"
        try await fixture.connect().execute(script: "ALTER TABLE items DROP COLUMN done")
        let written = try await ToolRun.run(["diff", "--model", modelFile, "--write", "restore_done", "--dir", fresh],
                                            databaseURL: fixture.database.url(redactingPassword: false))
        #expect(written.status == 0, "\(written.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: fresh).sorted() == ["0001_restore_done_expand.sql", "0002_restore_done_validate.sql"])
        let dump = try await fixture.tool(["dump"])
        #expect(dump.output.contains(#"CREATE TABLE "player""#) && !dump.output.contains("postgres_data_migrations"))
    }

    @Test func lintReadsLiveTableSizes() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_table.sql": """
                -- migrate:up
                CREATE TABLE big AS SELECT g AS x FROM generate_series(1, 50000) g;
                CREATE SCHEMA analytics;
                CREATE TABLE analytics.events AS SELECT g AS at FROM generate_series(1, 40000) g;
                CREATE TABLE tiny (x int);
                ANALYZE big;
                ANALYZE analytics.events;
                """,
        ])
        #expect(try await fixture.tool(["up"]).status == 0)
        try fixture.write("0002_index.sql", """
            -- migrate:up
            CREATE INDEX big_x_idx ON big (x);
            CREATE INDEX events_at_idx ON analytics.events (at);
            CREATE INDEX tiny_x_idx ON tiny (x);
            CREATE INDEX ghost_idx ON analytics.ghosts (x);
            """)
        let lint = try await fixture.tool(["lint"])
        #expect(lint.status == 3)
        #expect(lint.output.contains("0002_index.sql:2: error [index-without-concurrently]"))
        #expect(lint.output.contains(#""big" is "#) && lint.output.contains("about 50k rows: this blocks writes to a"))
        // A schema-qualified table is sized as well (it was missed when only current_schema() was read).
        #expect(lint.output.contains("0002_index.sql:3: error [index-without-concurrently]"))
        #expect(lint.output.contains(#""analytics.events" is "#) && lint.output.contains("about 40k rows"))
        // An empty table: the lock is brief, a warning; a table that does not exist: nothing.
        #expect(lint.output.contains("0002_index.sql:4: warning [index-without-concurrently]"))
        #expect(!lint.output.contains("0002_index.sql:5"))
        // The code frame and the rule's page.
        #expect(lint.output.contains("3 │ CREATE INDEX events_at_idx ON analytics.events (at)"))
        #expect(lint.output.contains("docs: /documentation/postgresmigrations/index-without-concurrently"))
        #expect(!lint.output.contains("0001_table.sql"))
    }

    /// With a database, a pending SET NOT NULL on a column that an applied migration (or
    /// anything else) proved free of NULL with a validated CHECK is not reported; one on
    /// another column is.
    @Test func lintKnowsTheValidatedNotNullChecksOfTheDatabase() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_table.sql": """
                -- migrate:up
                CREATE TABLE notes (id bigint, title text, body text);
                INSERT INTO notes SELECT g, 't', 'b' FROM generate_series(1, 1000) g;
                ALTER TABLE notes ADD CONSTRAINT notes_title_not_null CHECK (title IS NOT NULL) NOT VALID;
                """,
        ])
        #expect(try await fixture.tool(["up"]).status == 0)
        try await fixture.connect().execute(script: "ALTER TABLE notes VALIDATE CONSTRAINT notes_title_not_null")
        try fixture.write("0002_required.sql", """
            -- migrate:up
            ALTER TABLE notes ALTER COLUMN title SET NOT NULL;
            ALTER TABLE notes ALTER COLUMN body SET NOT NULL;
            """)
        let lint = try await fixture.tool(["lint"])
        #expect(!lint.output.contains("0002_required.sql:2:"), "\(lint.output)")
        #expect(lint.output.contains("0002_required.sql:3:") && lint.output.contains("[set-not-null]"))
    }

    /// `stage`: the safe SQL between two exported model schemas, printed or written as
    /// migrations that `up` applies to a populated table and that lint finds nothing in.
    @Test func stageWritesTheSafeStepsBetweenTwoModelVersions() async throws {
        let v1 = ManagedObjectModel(entities: [EntityDescription(name: "Person", properties: [
            .attribute(AttributeDescription(name: "name", type: .string)),
            .attribute(AttributeDescription(name: "age", type: .integer32, defaultValue: .integer(0))),
        ])])
        let v2 = ManagedObjectModel(entities: [EntityDescription(name: "Person", properties: [
            .attribute(AttributeDescription(name: "nickname", type: .string, isOptional: true)),
            .attribute(AttributeDescription(name: "years", type: .integer32, defaultValue: .integer(0))),
        ], uniquenessConstraints: [["nickname"]], indexes: [["years"]])])
        let fixture = try await MigrationFixture.make(["0001_v1.sql": "-- migrate:up\n" + SchemaDiff.dump(v1.schemaDescription)])
        try v1.schemaJSON().write(to: URL(fileURLWithPath: fixture.folder + "/v1.json"))
        try v2.schemaJSON().write(to: URL(fileURLWithPath: fixture.folder + "/v2.json"))
        #expect(try await fixture.tool(["up"]).status == 0)
        let connection = try await fixture.connect()
        _ = try await connection.execute(script: "INSERT INTO person (name, age) SELECT 'p' || i, i FROM generate_series(1, 500) AS i")

        let arguments = ["stage", "--from", fixture.folder + "/v1.json", "--to", fixture.folder + "/v2.json", "--rename-column", "person.age=years"]
        let printed = try await fixture.tool(arguments)
        #expect(printed.status == 0, "\(printed.errors)")
        #expect(printed.output.contains(#"ALTER TABLE "person" RENAME COLUMN "age" TO "years";"#))
        #expect(printed.output.contains("CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS"))
        #expect(printed.output.contains(#"DROP COLUMN IF EXISTS "name""#))
        let written = try await fixture.tool(arguments + ["--write", "v2"])
        #expect(written.status == 0, "\(written.errors)")
        let files = try FileManager.default.contentsOfDirectory(atPath: fixture.folder).filter { $0.hasSuffix(".sql") }.sorted()
        #expect(files == ["0001_v1.sql", "0002_v2_expand.sql", "0003_v2_indexes.sql", "0004_v2_validate.sql", "0005_v2_contract.sql"])
        let lint = try await fixture.tool(["lint"])
        #expect(!lint.output.contains("error ["), "\(lint.output)")
        let up = try await fixture.tool(["up"])
        #expect(up.status == 0, "\(up.output) \(up.errors)")
        #expect(try await connection.query("SELECT sum(years)::int8 FROM person")[0].decode(Int64.self, at: 0) == 125_250)
        #expect(try await connection.query("SELECT count(*) FROM pg_constraint WHERE conname = 'person_nickname_key'")[0].decode(Int64.self, at: 0) == 1)
        await connection.close()
    }

    /// `diff`'s migrations for a model change on a populated 1M-row table: lint --strict
    /// finds nothing in them, `up` applies them without ever holding a lock that blocks
    /// writes for long (a monitor reads pg_locks every few milliseconds), and the database
    /// then matches the model. The one-file SQL, on the same data, holds such a lock for
    /// its whole transaction: the monitor sees the difference.
    @Test func diffWritesMigrationsThatHoldNoBlockingLockOverAScan() async throws {
        func item(_ v2: Bool) -> EntityDescription {
            var properties: [PropertyDescription] = [
                .attribute(AttributeDescription(name: "name", type: .string)),
                .attribute(AttributeDescription(name: "weight", type: .integer64, defaultValue: .integer(v2 ? 1 : 0))),
                .attribute(AttributeDescription(name: "notes", type: .string, isOptional: !v2)),
            ]
            if v2 {
                properties += [
                    .attribute(AttributeDescription(name: "code", type: .string, isOptional: true)),
                    .attribute(AttributeDescription(name: "rank", type: .integer64, defaultValue: .integer(0))),
                    .relationship(RelationshipDescription(name: "list", destination: "List", inverse: "items")),
                ]
            }
            return EntityDescription(name: "Item", properties: properties, uniquenessConstraints: v2 ? [["code"]] : [], indexes: v2 ? [["weight"]] : [])
        }
        let list = { (v2: Bool) in
            EntityDescription(name: "List", properties: [.attribute(AttributeDescription(name: "title", type: .string))]
                              + (v2 ? [.relationship(RelationshipDescription(name: "items", destination: "Item", inverse: "list", toMany: true))] : []))
        }
        let v1 = ManagedObjectModel(entities: [item(false), list(false)])
        let v2 = ManagedObjectModel(entities: [item(true), list(true)])

        /// Applies `diff`'s output (staged or one file) to 1M rows; returns the longest time a
        /// lock blocking writes to "item" was held, in seconds.
        func longestBlockingLock(oneFile: Bool) async throws -> (seconds: Double, holder: String) {
            let fixture = try await MigrationFixture.make(["0001_v1.sql": "-- migrate:up\n" + SchemaDiff.dump(v1.schemaDescription)])
            try v2.schemaJSON().write(to: URL(fileURLWithPath: fixture.folder + "/v2.json"))
            #expect(try await fixture.tool(["up"]).status == 0)
            let connection = try await fixture.connect()
            _ = try await connection.execute(script: """
                INSERT INTO list (title) VALUES ('a');
                INSERT INTO item (name, weight, notes) SELECT 'item ' || i, i % 1000, 'n' FROM generate_series(1, 1000000) AS i;
                ANALYZE item;
                """)
            let diff = try await fixture.tool(["diff", "--model", fixture.folder + "/v2.json", "--write", "v2"] + (oneFile ? ["--one-file"] : []))
            #expect(diff.status == 0, "\(diff.errors)")
            if !oneFile {
                let files = try FileManager.default.contentsOfDirectory(atPath: fixture.folder).filter { $0.hasSuffix(".sql") }.sorted()
                #expect(files == ["0001_v1.sql", "0002_v2_expand.sql", "0003_v2_indexes.sql", "0004_v2_validate.sql"])
                let lint = try await fixture.tool(["lint", "--strict"])
                #expect(lint.status == 0, "\(lint.output)")
            }
            let monitor = try await fixture.connect()
            let running = try ToolRun.start(["up", "--dir", fixture.folder], databaseURL: fixture.database.url(redactingPassword: false))
            let clock = ContinuousClock()
            var longest = Duration.zero
            var longestHolder = ""
            // A hold lasts from the first poll that sees it to the last one: a poll delayed
            // after the lock went (both processes share two busy cores) does not lengthen it.
            var hold: (first: ContinuousClock.Instant, last: ContinuousClock.Instant, holder: String)?
            while running.isRunning {
                let holders = try await monitor.query("""
                    SELECT l.mode || ': ' || coalesce(a.query, '') FROM pg_locks AS l LEFT JOIN pg_stat_activity AS a ON a.pid = l.pid
                    WHERE l.relation = to_regclass('item') AND l.granted AND l.pid <> pg_backend_pid()
                      AND l.mode IN ('ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')
                    """).map { try $0.decode(String.self, at: 0) }
                let now = clock.now
                if let holder = holders.first {
                    hold = (hold?.first ?? now, now, hold?.holder ?? holder)
                } else if let ended = hold {
                    if ended.last - ended.first > longest { (longest, longestHolder) = (ended.last - ended.first, ended.holder) }
                    hold = nil
                }
                try await Task.sleep(for: .milliseconds(2))
            }
            if let ended = hold, ended.last - ended.first > longest { (longest, longestHolder) = (ended.last - ended.first, ended.holder) }
            let up = await running.finish()
            #expect(up.status == 0, "\(up.output) \(up.errors)")
            let check = try await fixture.tool(["diff", "--model", fixture.folder + "/v2.json", "--exit-code"])
            #expect(check.status == 0, "the database should match the model: \(check.output)")
            #expect(try await connection.query("SELECT count(*) FROM item WHERE rank = 0 AND notes = 'n'")[0].decode(Int64.self, at: 0) == 1_000_000)
            await monitor.close()
            await connection.close()
            return (Double(longest.components.seconds) + Double(longest.components.attoseconds) / 1e18, longestHolder)
        }

        let (staged, stagedHolder) = try await longestBlockingLock(oneFile: false)
        let (oneFile, _) = try await longestBlockingLock(oneFile: true)
        // Alone, the staged files show no blocking lock at all and the one-file SQL holds one
        // for about a second; on a loaded machine a catalog-only ALTER and its commit can take
        // 0.3 s, so a hold passes when short or when far shorter than the one-file's scans.
        #expect(staged < 0.25 || staged * 4 < oneFile,
                "diff's migrations held a lock blocking writes for \(staged) s (\(stagedHolder)), the one-file SQL for \(oneFile) s")
        #expect(oneFile > staged * 2, "the one-file SQL (\(oneFile) s) should hold its locks over the scans")
    }

    /// A lock timeout in JSON: exit code 4, the file and line, and the blocking session as
    /// fields; an idle transaction gets pg_terminate_backend advice, not pg_cancel_backend.
    @Test func aLockTimeoutNamesItsBlockersAsFields() async throws {
        let fixture = try await MigrationFixture.make(["0001_t.sql": "-- migrate:up\nCREATE TABLE t (x int);\n"])
        #expect(try await fixture.tool(["up"]).status == 0)
        try fixture.write("0002_alter.sql", "-- migrate:up\nALTER TABLE t ADD COLUMN y int;\n")
        let blocker = try await fixture.connect()
        try await blocker.execute(script: "BEGIN; SELECT * FROM t")
        let run = try await fixture.tool(["up", "--json", "--lock-timeout", "1s", "--lock-retries", "0"])
        #expect(run.status == 4, "\(run.output) \(run.errors)")
        struct Failure: Decodable {
            var error: Body
            struct Body: Decodable { var message: String; var exitCode: Int; var sqlState: String?; var file: String?; var line: Int?; var blockers: [LockBlocker]? }
        }
        let failure = try JSONDecoder().decode(Failure.self, from: Data(run.output.utf8)).error
        #expect(failure.exitCode == 4 && failure.sqlState == "55P03" && failure.file == "0002_alter.sql" && failure.line == 2)
        #expect(failure.blockers?.map(\.pid) == [blocker.backendPID] && failure.blockers?.first?.state == "idle in transaction")
        #expect(failure.message.contains("pg_terminate_backend") && !failure.message.contains("pg_cancel_backend(pid) "))
        await blocker.close()
    }

    /// A no-transaction file that failed part-way and was then fixed is partial, not edited:
    /// `up` resumes it after the statements that succeeded and records the fixed checksum.
    @Test func aFixedPartialFileResumesInsteadOfCountingAsEdited() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_steps.sql": "-- migrate:no-transaction\n-- migrate:up\nCREATE TABLE one (x int);\nSELECT 1 / 0;\nCREATE TABLE three (x int);\n",
        ])
        #expect(try await fixture.tool(["up"]).status == 1)
        try fixture.write("0001_steps.sql", "-- migrate:no-transaction\n-- migrate:up\nCREATE TABLE one (x int);\nSELECT 1 / 1;\nCREATE TABLE three (x int);\n")
        let status = try await fixture.tool(["status"])
        #expect(status.output.contains("partial") && status.output.contains("the file changed since") && !status.output.contains("edited"), "\(status.output)")
        let up = try await fixture.tool(["up"])
        #expect(up.status == 0, "\(up.errors)")
        #expect(try await fixture.tableExists("three"))
        let statuses = try await fixture.migrator().status()
        #expect(statuses.map(\.state) == [.applied] && statuses[0].applied?.checksum == statuses[0].checksum)
        #expect(try await fixture.tool(["verify"]).status == 0)
    }

    @Test func verifySaysWhatIsPending() async throws {
        let fixture = try await MigrationFixture.make(["0001_a.sql": "-- migrate:up\nCREATE TABLE a (x int);\n"])
        #expect(try await fixture.tool(["up"]).status == 0)
        try fixture.write("0002_b.sql", "-- migrate:up\nCREATE TABLE b (x int);\n")
        let verify = try await fixture.tool(["verify"])
        #expect(verify.status == 0)
        #expect(verify.output.contains("the applied migrations match") && verify.output.contains("1 file is pending"))
        #expect(!verify.output.contains("the database matches"))
    }

    @Test func newCreatesTheNextFile() async throws {
        let fixture = try await MigrationFixture.make(["0007_a.sql": "-- migrate:up\nSELECT 1;\n"])
        let run = try await fixture.tool(["new", "Add weights"])
        #expect(run.status == 0)
        let created = try String(contentsOfFile: fixture.folder + "/0008_add_weights.sql", encoding: .utf8)
        #expect(created.contains("-- migrate:up") && created.contains("-- migrate:down"))
    }
}
