import Foundation
@testable import PostgresMigrations
import Testing

/// Each lint rule with a statement it must report and a safe one it must not.
struct MigrationLinterTests {
    static let setup = "CREATE TABLE fresh (id bigint, name text);"

    static func findings(_ sql: String, transactional: Bool = true, lockTimeout: String? = nil,
                         sizes: [String: TableSize]? = nil, defaultLockTimeout: String = "5s") throws -> [LintFinding] {
        let header = (transactional ? "" : "-- migrate:no-transaction\n") + (lockTimeout.map { "-- migrate:lock-timeout \($0)\n" } ?? "")
        let migration = try Migration(fileName: "0001_test.sql", contents: header + "-- migrate:up\n\(setup)\n\(sql)\n")
        return try MigrationLinter(defaultLockTimeout: defaultLockTimeout, tableSizes: sizes).lint([migration])
    }

    @Test(arguments: [
        ("index-without-concurrently", "CREATE INDEX items_name_idx ON items (name);", "CREATE INDEX fresh_name_idx ON fresh (name);", false),
        ("concurrently-in-transaction", "CREATE INDEX CONCURRENTLY items_name_idx ON items (name);",
         "CREATE INDEX CONCURRENTLY items_name_idx ON items (name);", true),
        ("add-column-not-null-without-default", "ALTER TABLE items ADD COLUMN rank integer NOT NULL;",
         "ALTER TABLE items ADD COLUMN rank integer NOT NULL DEFAULT 0;", false),
        ("add-column-rewrite", "ALTER TABLE items ADD COLUMN token uuid DEFAULT gen_random_uuid();",
         "ALTER TABLE items ADD COLUMN token uuid DEFAULT '00000000-0000-0000-0000-000000000000';", false),
        ("column-type-change", "ALTER TABLE items ALTER COLUMN weight TYPE bigint;", "ALTER TABLE fresh ALTER COLUMN id TYPE integer;", false),
        ("set-not-null", "ALTER TABLE items ALTER COLUMN name SET NOT NULL;",
         "ALTER TABLE items ADD CONSTRAINT items_name_not_null CHECK (name IS NOT NULL) NOT VALID;\nALTER TABLE items VALIDATE CONSTRAINT items_name_not_null;\nALTER TABLE items ALTER COLUMN name SET NOT NULL;", false),
        ("constraint-without-not-valid", "ALTER TABLE items ADD CONSTRAINT items_list_fkey FOREIGN KEY (list_id) REFERENCES lists (id);",
         "ALTER TABLE items ADD CONSTRAINT items_list_fkey FOREIGN KEY (list_id) REFERENCES lists (id) NOT VALID;", false),
        ("unique-without-index", "ALTER TABLE items ADD CONSTRAINT items_name_key UNIQUE (name);",
         "ALTER TABLE items ADD CONSTRAINT items_name_key UNIQUE USING INDEX items_name_idx;", false),
        ("drop-column", "ALTER TABLE items DROP COLUMN notes;", "ALTER TABLE items DROP CONSTRAINT items_notes_check;", false),
        ("rename-column", "ALTER TABLE items RENAME COLUMN notes TO remarks;", "ALTER TABLE fresh RENAME COLUMN name TO title;", false),
        ("rename-table", "ALTER TABLE items RENAME TO things;", "ALTER TABLE fresh RENAME TO brand_new;", false),
        ("drop-table", "DROP TABLE items;", "DROP TABLE fresh;", false),
        ("missing-lock-timeout", "SET lock_timeout = 0;", "SET lock_timeout = '2s';", false),
    ])
    func eachRuleReportsTheDangerousFormAndNotTheSafeOne(rule: String, dangerous: String, safe: String, safeOutsideTransaction: Bool) throws {
        let reported = try Self.findings(dangerous)
        #expect(reported.contains { $0.rule == rule && $0.line == 3 }, "\(rule) should report: \(dangerous)")
        let safeFindings = try Self.findings(safe, transactional: !safeOutsideTransaction)
        #expect(!safeFindings.contains { $0.rule == rule }, "\(rule) should not report: \(safe)")
    }

    @Test func aFileLockingATableWithLockTimeoutDisabledIsReported() throws {
        let sql = "ALTER TABLE items ADD COLUMN rank integer;"
        #expect(try Self.findings(sql, lockTimeout: "0").contains { $0.rule == "missing-lock-timeout" })
        #expect(try Self.findings(sql, defaultLockTimeout: "0").contains { $0.rule == "missing-lock-timeout" })
        #expect(!(try Self.findings(sql).contains { $0.rule == "missing-lock-timeout" }))
    }

    @Test func aCommentSilencesOneRuleForOneStatement() throws {
        let findings = try Self.findings("-- lint:ignore drop-column\nALTER TABLE items DROP COLUMN notes;\nALTER TABLE items DROP COLUMN extra;")
        #expect(findings.map(\.line) == [5])
    }

    @Test func liveSizesAreQuotedAndOnlyExistingTablesCount() throws {
        let sizes = ["items": TableSize(bytes: 40 * 1024 * 1024 * 1024, estimatedRows: 120_000_000)]
        let findings = try Self.findings("ALTER TABLE items ALTER COLUMN weight TYPE bigint;\nCREATE INDEX ghosts_idx ON ghosts (x);", sizes: sizes)
        #expect(findings.count == 1)
        #expect(findings[0].message.contains("\"items\" is 40 GB, about 120.0M rows: this rewrites a 40 GB table"))
        #expect(findings[0].tableBytes == Int64(42_949_672_960))
    }

    @Test func theRepositorysMigrationsAreClean() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../migrations").standardized.path
        #expect(try MigrationLinter().lint(MigrationDirectory(path: folder).migrations).isEmpty)
    }
}
