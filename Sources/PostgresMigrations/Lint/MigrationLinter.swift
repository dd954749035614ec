/// Finds operations in migrations that lock or rewrite big tables, fail on tables with
/// rows, or break the application instances still running during a deploy.
///
/// ```swift
/// let findings = try MigrationLinter().lint(directory.migrations)
/// ```
///
/// Rules (each silenced for one statement by `-- lint:ignore <rule>` right before it):
/// `index-without-concurrently`, `concurrently-in-transaction`,
/// `add-column-not-null-without-default`, `add-column-rewrite`, `column-type-change`,
/// `set-not-null`, `constraint-without-not-valid`, `unique-without-index`, `drop-column`,
/// `rename-column`, `rename-table`, `drop-table`, `missing-lock-timeout`.
///
/// Without a database, every table not created by the linted migrations counts as existing;
/// with ``tableSizes`` (read by `postgres-data lint --database-url`), only the tables that
/// exist count, and findings say how big they are ("rewrites a 40 GB table").
public struct MigrationLinter: Sendable {
    /// The `lock_timeout` the runner applies to files that do not set one ("0" disables it).
    public var defaultLockTimeout: String
    /// Sizes of the live tables by name; nil when no database was given.
    public var tableSizes: [String: TableSize]?

    /// A linter for files run with `defaultLockTimeout`, with live `tableSizes` when a database was read.
    public init(defaultLockTimeout: String = MigratorOptions().lockTimeout, tableSizes: [String: TableSize]? = nil) {
        self.defaultLockTimeout = defaultLockTimeout
        self.tableSizes = tableSizes
    }

    /// Lints `migrations` in version order; tables created by earlier ones count as new.
    public func lint(_ migrations: [Migration]) throws(MigrationError) -> [LintFinding] {
        var createdTables: Set<String> = []
        var findings: [LintFinding] = []
        for migration in migrations.sorted(by: { $0.version < $1.version }) {
            var validated: Set<String> = []
            var locksExistingTable: Int?
            for statement in try migration.up.statements(file: migration.fileName) {
                let shape = StatementShape(statement)
                var found: [LintFinding] = []
                func add(_ rule: String, _ severity: LintFinding.Severity, _ message: String, _ hint: String, effect: String? = nil) {
                    var finding = LintFinding(rule: rule, severity: severity, file: migration.fileName, line: statement.line,
                                              message: message, hint: hint, table: shape.table)
                    if let table = shape.table, let size = tableSizes?[table] {
                        finding.tableBytes = size.bytes
                        finding.message += " — \"\(table)\" is \(size.description)"
                        if let effect { finding.message += ": this \(effect) a \(TableSize.format(bytes: size.bytes)) table" }
                    }
                    found.append(finding)
                }
                let words = statement.words
                let existing = shape.table.map { isExisting($0, created: createdTables) } ?? false
                if migration.isTransactional, words.contains("concurrently") {
                    add("concurrently-in-transaction", .error,
                        "\(words.prefix(2).joined(separator: " ").uppercased()) … CONCURRENTLY cannot run inside a transaction block",
                        "add '-- migrate:no-transaction' to this file and keep the statement alone in it")
                }
                switch shape.kind {
                case .createTable:
                    if let table = shape.table { createdTables.insert(table) }
                case .createIndex(let concurrently):
                    if !concurrently && existing {
                        add("index-without-concurrently", .error,
                            "CREATE INDEX takes a SHARE lock on \"\(shape.table!)\": writes wait until the whole index is built",
                            "CREATE INDEX CONCURRENTLY, in a file with '-- migrate:no-transaction'", effect: "blocks writes to")
                        locksExistingTable = locksExistingTable ?? statement.line
                    }
                case .alterTable where existing:
                    locksExistingTable = locksExistingTable ?? statement.line
                    for action in shape.actions {
                        lintAlterAction(action, table: shape.table!, validated: &validated, add: add)
                    }
                case .alterTable:
                    break
                case .dropTable:
                    if existing {
                        add("drop-table", .warning, "DROP TABLE \"\(shape.table!)\": instances of the previous release still running during the deploy may use it",
                            "first deploy code that no longer uses the table, then drop it in a later release")
                        locksExistingTable = locksExistingTable ?? statement.line
                    }
                case .other:
                    if words.first == "set", words.dropFirst().first == "lock_timeout",
                       statement.tokens.contains(where: { $0.kind == .number("0") || $0.kind == .string("0") }) {
                        add("missing-lock-timeout", .error, "SET lock_timeout = 0 lets a statement wait for a lock forever, and every query queues behind it",
                            "remove it; override the runner's timeout with '-- migrate:lock-timeout 10s' if the default is too short")
                    }
                }
                findings += found.filter { !Self.ignored($0.rule, by: statement) }
            }
            if let line = locksExistingTable, Self.isZero(migration.lockTimeout ?? defaultLockTimeout) {
                findings.append(LintFinding(
                    rule: "missing-lock-timeout", severity: .error, file: migration.fileName, line: line,
                    message: "the file locks an existing table with lock_timeout disabled: waiting behind a long transaction, it blocks every query on the table",
                    hint: "set '-- migrate:lock-timeout 5s' (the runner retries with back-off)"))
            }
        }
        return findings
    }

    private func lintAlterAction(_ action: [SQLToken], table: String, validated: inout Set<String>,
                                 add: (String, LintFinding.Severity, String, String, String?) -> Void) {
        let words = action.map { $0.word ?? "" }
        func has(_ sequence: String...) -> Bool {
            guard sequence.count <= words.count else { return false }
            return (0...(words.count - sequence.count)).contains { start in
                sequence.enumerated().allSatisfy { words[start + $0.offset] == $0.element }
            }
        }
        let column = action.dropFirst(words.first == "add" || words.first == "alter" || words.first == "drop" ? 1 : 0)
            .first { $0.name != nil && !["column", "if", "not", "exists"].contains($0.word ?? "") }?.name ?? "?"
        switch words.first {
        case "add":
            let second = words.dropFirst().first ?? ""
            if ["constraint", "foreign", "check", "primary", "unique", "exclude"].contains(second) {
                if has("foreign", "key") || has("check") {
                    if !has("not", "valid") {
                        add("constraint-without-not-valid", .error,
                            "adding a \(has("check") ? "CHECK" : "FOREIGN KEY") constraint to \"\(table)\" checks every row while holding a lock that blocks writes",
                            "ADD CONSTRAINT … NOT VALID, then ALTER TABLE … VALIDATE CONSTRAINT in a later statement (it takes a weaker lock)", "scans")
                    }
                } else if (has("unique") || has("primary", "key")) && !has("using", "index") {
                    add("unique-without-index", .error,
                        "adding a UNIQUE or PRIMARY KEY constraint to \"\(table)\" builds its index while blocking writes",
                        "CREATE UNIQUE INDEX CONCURRENTLY first, then ADD CONSTRAINT … UNIQUE USING INDEX", "blocks writes to")
                }
            } else {
                if has("not", "null") && !has("default") && !has("generated") {
                    add("add-column-not-null-without-default", .error,
                        "ADD COLUMN \"\(column)\" NOT NULL without a DEFAULT fails as soon as \"\(table)\" has a row",
                        "add a DEFAULT (constant defaults are free since PostgreSQL 11), or add the column nullable, backfill, then SET NOT NULL", nil)
                }
                let volatile = ["random", "clock_timestamp", "gen_random_uuid", "uuid_generate_v4", "timeofday", "nextval"]
                if words.contains(where: { ["serial", "bigserial", "smallserial"].contains($0) }) || has("stored")
                    || (has("default") && words.contains(where: volatile.contains)) {
                    add("add-column-rewrite", .error,
                        "ADD COLUMN \"\(column)\" with a volatile default, a serial type or a stored generated expression rewrites \"\(table)\" under an ACCESS EXCLUSIVE lock",
                        "add the column without it, backfill in batches, then set the default", "rewrites")
                }
            }
        case "alter":
            if has("type") && !has("set", "default") {
                add("column-type-change", .error,
                    "changing the type of \"\(column)\" rewrites \"\(table)\" and its indexes under an ACCESS EXCLUSIVE lock (unless the types are binary-compatible, such as varchar(n) to text)",
                    "add a new column of the new type, backfill it in batches, switch the code over, then drop the old one", "rewrites")
            } else if has("set", "not", "null") && !validated.contains(table) {
                add("set-not-null", .error,
                    "SET NOT NULL on \"\(column)\" scans all of \"\(table)\" under an ACCESS EXCLUSIVE lock",
                    "first ADD CONSTRAINT … CHECK (\(column) IS NOT NULL) NOT VALID and VALIDATE CONSTRAINT it; SET NOT NULL then skips the scan", "scans")
            }
        case "validate":
            validated.insert(table)
        case "drop":
            if words.dropFirst().first != "constraint" && !has("default") && !has("not", "null") {
                add("drop-column", .warning,
                    "DROP COLUMN \"\(column)\": instances of the previous release still running during the deploy may read or write it",
                    "first deploy code that no longer uses the column (and remove it from the model), then drop it in a later release", nil)
            }
        case "rename":
            if words.dropFirst().first == "to" {
                add("rename-table", .warning, "renaming \"\(table)\" breaks the instances of the previous release still running during the deploy",
                    "create the new table or a view under the new name, move the code over, then drop the old name later", nil)
            } else if !has("constraint") {
                add("rename-column", .warning, "renaming \"\(column)\" breaks the instances of the previous release still running during the deploy",
                    "add a new column, write both, backfill, move reads over, then drop the old column in a later release", nil)
            }
        default:
            break
        }
    }

    private func isExisting(_ table: String, created: Set<String>) -> Bool {
        if created.contains(table) { return false }
        guard let tableSizes else { return true }
        return tableSizes[table] != nil
    }

    static func ignored(_ rule: String, by statement: SQLStatement) -> Bool {
        statement.leadingComments.contains { comment in
            guard let range = comment.range(of: "lint:ignore") else { return false }
            return comment[range.upperBound...].split(whereSeparator: { $0 == " " || $0 == "," }).contains { $0 == rule || $0 == "all" }
        }
    }

    static func isZero(_ duration: String) -> Bool {
        duration.prefix { $0.isNumber }.allSatisfy { $0 == "0" }
    }
}
