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

    /// A rule's example as a migration file: leading `-- migrate:` lines are directives.
    static func file(_ example: String) throws -> Migration {
        let lines = example.split(separator: "\n", omittingEmptySubsequences: false)
        let header = lines.prefix { $0.hasPrefix("-- migrate:") }
        let body = lines.dropFirst(header.count)
        return try Migration(fileName: "0001_example.sql", contents: (header + ["-- migrate:up"] + body).joined(separator: "\n") + "\n")
    }

    /// Every rule of the catalog reports its documented example and not its safe form.
    @Test(arguments: LintRule.all)
    func eachRuleReportsItsExampleAndNotItsSafeForm(rule: LintRule) throws {
        let linter = MigrationLinter(defaultLockTimeout: "5s", includesStyle: rule.level == .style)
        let reported = try linter.lint([Self.file(rule.reported)])
        #expect(reported.contains { $0.rule == rule.id }, "\(rule.id) should report: \(rule.reported) — got \(reported.map(\.rule))")
        if let finding = reported.first(where: { $0.rule == rule.id }) {
            #expect(finding.severity == rule.severity && finding.documentation == rule.documentationPath && !finding.hint.isEmpty)
        }
        let safe = try linter.lint([Self.file(rule.safe)])
        #expect(!safe.contains { $0.rule == rule.id }, "\(rule.id) should not report: \(rule.safe)")
        // Without `--style`, a style rule reports nothing.
        if rule.level == .style {
            #expect(try !MigrationLinter().lint([Self.file(rule.reported)]).contains { $0.rule == rule.id })
        }
    }

    /// The DocC catalog has one article per rule, equal to the catalog's text
    /// (`UPDATE_LINT_DOCS=1 swift test --filter articles` rewrites them).
    @Test func eachRuleHasItsDocumentationArticle() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/PostgresMigrations/Documentation.docc/Rules").standardized.path
        if ProcessInfo.processInfo.environment["UPDATE_LINT_DOCS"] != nil {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for rule in LintRule.all { try rule.documentationArticle.write(toFile: "\(folder)/\(rule.id).md", atomically: true, encoding: .utf8) }
        }
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: folder))
        #expect(files == Set(LintRule.all.map { "\($0.id).md" }))
        for rule in LintRule.all {
            #expect(try String(contentsOfFile: "\(folder)/\(rule.id).md", encoding: .utf8) == rule.documentationArticle, "\(rule.id).md is stale")
        }
        #expect(Set(LintRule.all.map(\.id)).count == LintRule.all.count)
    }

    @Test func aValidatedNotNullCheckInAnEarlierMigrationLetsSetNotNullSkipTheScan() throws {
        let add = try Migration(fileName: "0001_check.sql", contents: """
            -- migrate:up
            ALTER TABLE items ADD CONSTRAINT items_name_not_null CHECK (name IS NOT NULL) NOT VALID;
            """)
        let validate = try Migration(fileName: "0002_validate.sql", contents: """
            -- migrate:up
            ALTER TABLE items VALIDATE CONSTRAINT items_name_not_null;
            ALTER TABLE items ALTER COLUMN name SET NOT NULL;
            ALTER TABLE items ALTER COLUMN other SET NOT NULL;
            """)
        let findings = try MigrationLinter().lint([add, validate])
        #expect(findings.filter { $0.rule == "set-not-null" }.map(\.line) == [4])
        #expect(!findings.contains { $0.rule == "validate-in-same-transaction" })
    }

    @Test func aNoTransactionFileMayCommitItsOwnTransaction() throws {
        let findings = try Self.findings("BEGIN;\nUPDATE items SET rank = 0;\nCOMMIT;\nBEGIN;\nUPDATE items SET rank = 1;", transactional: false)
        #expect(findings.filter { $0.rule == "uncommitted-transaction" }.map(\.line) == [7])
        #expect(!findings.contains { $0.rule == "transaction-control" || $0.rule == "transaction-nesting" })
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

    @Test func aLockOnASmallLiveTableIsAWarningAndOnABigOneAnError() throws {
        let sql = "ALTER TABLE items ALTER COLUMN weight TYPE bigint;\nALTER TABLE items RENAME TO things;"
        let small = try Self.findings(sql, sizes: ["items": TableSize(bytes: 64 * 1024, estimatedRows: 300)])
        #expect(small.first { $0.rule == "column-type-change" }?.severity == .warning)
        #expect(small.first { $0.rule == "column-type-change" }?.message.contains("small enough today") == true)
        let big = try Self.findings(sql, sizes: ["items": TableSize(bytes: 8 << 20, estimatedRows: 90_000)])
        #expect(big.first { $0.rule == "column-type-change" }?.severity == .error)
    }

    @Test func schemaQualifiedTablesAreMatchedWithTheirSchema() throws {
        let sizes = ["analytics.events": TableSize(bytes: 3 << 30, estimatedRows: 9_000_000), "public.events": TableSize(bytes: 8192, estimatedRows: 1),
                     "events": TableSize(bytes: 8192, estimatedRows: 1)]
        let findings = try Self.findings("CREATE INDEX e_idx ON analytics.events (at);\nCREATE INDEX e2_idx ON \"analytics\".events (kind);\nCREATE INDEX g_idx ON ghosts.events (x);", sizes: sizes)
        #expect(findings.map(\.line) == [3, 4])
        #expect(findings.allSatisfy { $0.table == "analytics.events" && $0.tableBytes == 3 << 30 && $0.severity == .error })
        #expect(findings[0].message.contains("\"analytics.events\" is 3.0 GB, about 9.0M rows"))
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
