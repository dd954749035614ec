import Foundation
import PostgresClient
import PostgresDataTesting
@testable import PostgresMigrations
import Testing

/// What a migrations folder holds besides versioned files: repeatable migrations, callbacks,
/// verify sections, and the checksum file — each run by the real runner or the binary.
struct MigrationFolderTests {
    /// Flyway's `R__`: after the versioned files, again only when the file changes.
    @Test func aRepeatableMigrationRunsAfterTheVersionedOnesAndAgainWhenItChanges() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_items.sql": "-- migrate:up\nCREATE TABLE items (id bigint, weight int);\nINSERT INTO items VALUES (1, 5), (2, 50);\n",
            "R__heavy_items.sql": "-- migrate:up\nCREATE OR REPLACE VIEW heavy_items AS SELECT id FROM items WHERE weight > 10;\n",
        ])
        let first = try await fixture.migrator().up()
        #expect(first.map(\.fileName) == ["0001_items.sql", "R__heavy_items.sql"])
        #expect(try await fixture.scalar("SELECT count(*) FROM heavy_items", as: Int64.self) == 1)
        #expect(try await fixture.migrator().up().isEmpty, "an unchanged repeatable migration does not run again")
        let status = try await fixture.tool(["status", "--exit-code"])
        #expect(status.status == 0 && status.output.contains("applied      R__heavy_items.sql"), "\(status.output)")

        try fixture.write("R__heavy_items.sql", "-- migrate:up\nCREATE OR REPLACE VIEW heavy_items AS SELECT id FROM items WHERE weight > 1;\n")
        let changed = try await fixture.tool(["status", "--exit-code"])
        #expect(changed.status == 3 && changed.output.contains("pending      R__heavy_items.sql"))
        #expect(try await fixture.tool(["plan"]).output.contains("-- apply R__heavy_items.sql"))
        #expect(try await fixture.migrator().up().map(\.fileName) == ["R__heavy_items.sql"])
        #expect(try await fixture.scalar("SELECT count(*) FROM heavy_items", as: Int64.self) == 2)
        #expect(try await fixture.scalar("SELECT count(*) FROM postgres_data_migrations", as: Int64.self) == 1)
        #expect(throws: MigrationError.self) {
            try Migration(fileName: "R__x.sql", contents: "-- migrate:up\nSELECT 1;\n-- migrate:down\nSELECT 2;\n")
        }
    }

    /// Flyway's SQL callbacks, in their order, and afterMigrate only after a run that succeeded.
    @Test func callbacksRunAroundTheRunAndEachMigration() async throws {
        let fixture = try await MigrationFixture.make([
            "beforeMigrate.sql": "CREATE TABLE IF NOT EXISTS log (n serial, entry text);\nINSERT INTO log (entry) VALUES ('before');\n",
            "beforeEachMigrate__log.sql": "INSERT INTO log (entry) VALUES ('before each');\n",
            "afterEachMigrate.sql": "INSERT INTO log (entry) VALUES ('after each');\n",
            "afterMigrate.sql": "INSERT INTO log (entry) VALUES ('after');\n",
            "0001_a.sql": "-- migrate:up\nINSERT INTO log (entry) VALUES ('0001');\n",
            "0002_b.sql": "-- migrate:no-transaction\n-- migrate:up\nINSERT INTO log (entry) VALUES ('0002');\n",
        ])
        try await fixture.migrator().up()
        let entries = try await fixture.scalar("SELECT string_agg(entry, ',' ORDER BY n) FROM log", as: String.self)
        #expect(entries == "before,before each,0001,after each,before each,0002,after each,after")
        try fixture.write("0003_fails.sql", "-- migrate:up\nINSERT INTO log (entry) VALUES ('0003');\nSELECT 1 / 0;\n")
        await #expect(throws: MigrationError.self) { try await fixture.migrator().up() }
        let after = try await fixture.scalar("SELECT string_agg(entry, ',' ORDER BY n) FROM log", as: String.self)
        #expect(after == entries + ",before", "the failed migration's callbacks rolled back with it; afterMigrate did not run")
        #expect(try fixture.migrator().directory.migrations.count == 3, "callback files are not migrations")
    }

    /// sqitch's verify scripts: a failing check rolls its migration back; `verify --scripts`
    /// finds a check that no longer holds.
    @Test func aVerifySectionChecksItsMigration() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_items.sql": """
                -- migrate:up
                CREATE TABLE items (id bigint, weight int);
                -- migrate:down
                DROP TABLE items;
                -- migrate:verify
                SELECT id, weight FROM items WHERE false;
                """,
        ])
        try await fixture.migrator().up()
        #expect(try await fixture.tool(["verify", "--scripts"]).status == 0)
        try await fixture.connect().execute(script: "ALTER TABLE items DROP COLUMN weight")
        let drifted = try await fixture.tool(["verify", "--scripts"])
        #expect(drifted.status == 3 && drifted.output.contains("0001_items.sql:6: the verify section's check failed") && drifted.output.contains("42703"),
                "\(drifted.output)")

        try fixture.write("0002_tags.sql", "-- migrate:up\nCREATE TABLE tags (id bigint);\n-- migrate:verify\nSELECT name FROM tags WHERE false;\n")
        await #expect { try await fixture.migrator().up() } throws: { error in
            guard case .verificationFailed(let file, let line, _, let underlying)? = error as? MigrationError else { return false }
            return file == "0002_tags.sql" && line == 4 && underlying.sqlState == .undefinedColumn
        }
        #expect(try await !fixture.tableExists("tags"), "the migration rolled back with its failed check")
    }

    /// Atlas's `atlas.sum`: edits, additions and renames are refused before any database is
    /// reached; `new` keeps the file current; `hash` records a reviewed change.
    @Test func theSumFileRefusesAChangedFolderBeforeReachingTheDatabase() async throws {
        let fixture = try await MigrationFixture.make([
            "0001_a.sql": "-- migrate:up\nCREATE TABLE a (x int);\n",
            "0002_b.sql": "-- migrate:up\nCREATE TABLE b (x int);\n",
        ])
        #expect(try await fixture.tool(["hash"]).status == 0)
        let sum = try String(contentsOfFile: fixture.folder + "/postgres-data.sum", encoding: .utf8)
        #expect(sum.hasPrefix("h1:") && sum.contains("0001_a.sql h1:") && sum.contains("0002_b.sql h1:"))
        let unreachable = "postgres://nobody@127.0.0.1:1/none"
        #expect(try await ToolRun.run(["status", "--dir", fixture.folder], databaseURL: unreachable).errors.contains("connect"))

        try fixture.write("0002_b.sql", "-- migrate:up\nCREATE TABLE b (x bigint);\n")
        let edited = try await ToolRun.run(["up", "--dir", fixture.folder], databaseURL: unreachable)
        #expect(edited.status == 2 && edited.errors.contains("0002_b.sql was edited") && edited.errors.contains("postgres-data hash"), "\(edited.errors)")
        try FileManager.default.moveItem(atPath: fixture.folder + "/0002_b.sql", toPath: fixture.folder + "/0003_b.sql")
        let renamed = try await ToolRun.run(["status", "--dir", fixture.folder], databaseURL: unreachable)
        #expect(renamed.status == 2 && renamed.errors.contains("0003_b.sql is new") && renamed.errors.contains("0002_b.sql was removed or renamed"))

        #expect(try await fixture.tool(["hash"]).status == 0)
        #expect(try await fixture.tool(["new", "add c"]).status == 0)
        #expect(try await fixture.tool(["up"]).status == 0, "new kept the sum current")
        var text = try String(contentsOfFile: fixture.folder + "/postgres-data.sum", encoding: .utf8)
        text = text.replacingOccurrences(of: "0001_a.sql h1:", with: "0001_a.sql h1:0")
        try fixture.write("postgres-data.sum", text)
        #expect(try await fixture.tool(["status"]).errors.contains("0001_a.sql was edited"))
    }
}
