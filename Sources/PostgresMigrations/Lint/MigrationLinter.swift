/// Finds operations in migrations that lock or rewrite big tables, fail on tables with
/// rows, or break the application instances still running during a deploy.
///
/// ```swift
/// let findings = try MigrationLinter().lint(directory.migrations)
/// ```
///
/// The rules are listed in ``LintRule/all``, each with a documentation article; each is
/// silenced for one statement by `-- lint:ignore <rule>` right before it. Style rules run
/// only when ``includesStyle`` is set.
///
/// Without a database, every table not created by the linted migrations counts as existing;
/// with ``tableSizes`` (read by `postgres-data lint --database-url`), only the tables that
/// exist count, findings say how big they are ("rewrites a 40 GB table"), and a finding
/// whose harm grows with the table is an error only from ``smallTableBytes`` up.
public struct MigrationLinter: Sendable {
    /// The `lock_timeout` the runner applies to files that do not set one ("0" disables it).
    public var defaultLockTimeout: String
    /// Sizes of the live tables, keyed `schema.table` for every table and by the bare name
    /// for the tables the search path finds; nil when no database was given.
    public var tableSizes: [String: TableSize]?
    /// Whether the style rules (``LintRule/Level-swift.enum/style``) run too.
    public var includesStyle: Bool
    /// Columns (`table.column`, or `schema.table.column`) the live database already proves
    /// free of NULL — NOT NULL, or a validated `CHECK (column IS NOT NULL)` — so that a
    /// pending `SET NOT NULL` on them scans nothing (read by `lint --database-url`).
    public var provenNotNull: Set<String> = []
    /// Below this size (1 MiB), a lock or a rewrite is brief: such findings are warnings.
    public static let smallTableBytes: Int64 = 1 << 20

    /// A linter for files run with `defaultLockTimeout`, with live `tableSizes` when a database was read.
    public init(defaultLockTimeout: String = MigratorOptions().lockTimeout, tableSizes: [String: TableSize]? = nil,
                includesStyle: Bool = false) {
        self.defaultLockTimeout = defaultLockTimeout
        self.tableSizes = tableSizes
        self.includesStyle = includesStyle
    }

    /// Lints `migrations` in version order; tables created by earlier ones count as new.
    public func lint(_ migrations: [Migration]) throws(MigrationError) -> [LintFinding] {
        var state = LintState()
        state.provenNotNull = provenNotNull
        var findings: [LintFinding] = []
        for migration in migrations.sorted(by: { $0.version < $1.version }) {
            var file = FileLint(linter: self, migration: migration)
            for statement in try migration.up.statements(file: migration.fileName) {
                file.check(statement, state: &state)
            }
            file.finish()
            findings += file.findings
        }
        return findings
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

/// What the linter learns across files: the tables and indexes the linted migrations
/// create, and the columns a validated `CHECK (… IS NOT NULL)` covers.
struct LintState {
    var createdTables: Set<String> = []
    var createdIndexes: Set<String> = []
    /// Constraint name → `table.column` for `CHECK (column IS NOT NULL)` constraints.
    var notNullChecks: [String: String] = [:]
    var provenNotNull: Set<String> = []
}

/// The lint of one file: the statement being looked at, the file's transaction state and
/// the findings so far.
struct FileLint {
    let linter: MigrationLinter
    let migration: Migration
    private(set) var findings: [LintFinding] = []
    private(set) var statement = SQLStatement(text: "", line: 0, tokens: [], leadingComments: [])
    private(set) var shape = StatementShape(SQLStatement(text: "", line: 0, tokens: [], leadingComments: []))
    /// Constraints this file added `NOT VALID` (a VALIDATE of them here gains nothing in a transaction).
    var addedNotValid: Set<String> = []
    /// Enum values this file added (not usable before commit in a transaction).
    private var addedEnumValues: Set<String> = []
    /// In a no-transaction file: the line of an open BEGIN.
    private var openTransaction: Int?
    /// The first statement locking an existing table.
    private var locksExistingTable: Int?

    init(linter: MigrationLinter, migration: Migration) {
        self.linter = linter
        self.migration = migration
    }

    var words: [String] { statement.words }

    /// True when the statement's words contain `sequence`, in a row.
    func has(_ sequence: String...) -> Bool {
        Self.contains(sequence, in: words)
    }

    /// True when `words` contain `sequence`, in a row.
    static func contains(_ sequence: [String], in words: [String]) -> Bool {
        guard sequence.count <= words.count else { return false }
        return (0...(words.count - sequence.count)).contains { start in
            sequence.enumerated().allSatisfy { words[start + $0.offset] == $0.element }
        }
    }

    /// True when the statement's table exists before this migration: not created by the
    /// linted files, and, with live sizes, present in the database.
    func existing(_ state: LintState) -> Bool {
        guard let key = shape.tableKey else { return false }
        if state.createdTables.contains(key) { return false }
        guard let sizes = linter.tableSizes else { return true }
        return sizes[key] != nil
    }

    mutating func check(_ statement: SQLStatement, state: inout LintState) {
        self.statement = statement
        shape = StatementShape(statement)
        let words = statement.words
        let first = words.first ?? ""
        let second = words.dropFirst().first ?? ""
        if migration.isTransactional, words.contains("concurrently") {
            report("concurrently-in-transaction",
                   "\(words.prefix(2).joined(separator: " ").uppercased()) … CONCURRENTLY cannot run inside a transaction block: the migration fails")
        }
        checkTransactionControl(first: first, second: second)
        checkEnumValueUse()
        let isExisting = existing(state)
        switch shape.kind {
        case .createTable:
            if let key = shape.tableKey { state.createdTables.insert(key) }
            if !migration.isTransactional && !has("if", "not", "exists") {
                report("missing-if-not-exists", "CREATE TABLE \(quoted) without IF NOT EXISTS fails when a resumed run meets the table it already created")
            }
        case .createIndex(let concurrently):
            if let index = indexName() { state.createdIndexes.insert(index) }
            if !concurrently && isExisting {
                report("index-without-concurrently", "CREATE INDEX takes a SHARE lock on \(quoted): writes wait until the whole index is built",
                       effect: "blocks writes to")
                locksExistingTable = locksExistingTable ?? statement.line
            }
            if concurrently && !migration.isTransactional && !has("if", "not", "exists") {
                report("missing-if-not-exists", "CREATE INDEX CONCURRENTLY without IF NOT EXISTS fails with \"already exists\" when a resumed run meets the index a killed run built")
            }
        case .alterTable where isExisting:
            locksExistingTable = locksExistingTable ?? statement.line
            for action in shape.actions { checkAlterAction(action, state: &state) }
        case .alterTable:
            for action in shape.actions where action.first?.word == "add" {
                recordNotNullCheck(action.map { $0.word ?? "" }, tokens: action, state: &state)
            }
        case .dropTable:
            if isExisting {
                report("drop-table", "DROP TABLE \(quoted): instances of the previous release still running during the deploy may use it")
                locksExistingTable = locksExistingTable ?? statement.line
            }
        case .other:
            checkOther(first: first, second: second, state: state)
        }
        if linter.includesStyle { checkStyle() }
    }

    /// Reports the file-level findings (a lock taken with `lock_timeout` off, a BEGIN never committed).
    mutating func finish() {
        if let line = openTransaction {
            findings.append(finding("uncommitted-transaction", line: line,
                                    message: "BEGIN at line \(line) is never committed: its locks stay held while the runner goes on, and its work is lost when the connection closes"))
        }
        if let line = locksExistingTable, MigrationLinter.isZero(migration.lockTimeout ?? linter.defaultLockTimeout) {
            findings.append(finding("missing-lock-timeout", line: line,
                                    message: "the file locks an existing table with lock_timeout disabled: waiting behind a long transaction, it blocks every query on the table"))
        }
    }

    // MARK: Statements other than CREATE TABLE, CREATE INDEX, ALTER TABLE, DROP TABLE

    private mutating func checkOther(first: String, second: String, state: LintState) {
        switch (first, second) {
        case ("drop", "index"):
            let name = indexName(after: 2)
            let concurrently = has("concurrently")
            if !concurrently && !(name.map(state.createdIndexes.contains) ?? false) {
                report("drop-index-without-concurrently",
                       "DROP INDEX\(name.map { " \"\($0)\"" } ?? "") takes an ACCESS EXCLUSIVE lock on its table: reads and writes wait, after every query running on it")
            }
            if concurrently && !migration.isTransactional && !has("if", "exists") {
                report("missing-if-not-exists", "DROP INDEX CONCURRENTLY without IF EXISTS fails with \"does not exist\" when a resumed run meets the index already gone")
            }
        case ("reindex", _) where !has("concurrently"):
            report("reindex-without-concurrently", "REINDEX without CONCURRENTLY blocks writes to the table and reads through the index until the rebuild ends")
        case ("truncate", _) where has("cascade"):
            report("truncate-cascade", "TRUNCATE … CASCADE also empties every table with a foreign key to the ones named, and the tables referencing those")
        case ("drop", "database"):
            report("drop-database", "DROP DATABASE in a migration destroys a whole database")
        case ("alter", "type"):
            checkAlterType()
        case ("alter", "domain") where has("add") && (has("check") || has("constraint")) && !has("not", "valid"):
            report("alter-domain-add-constraint", "ALTER DOMAIN … ADD CONSTRAINT checks every column of the domain in every table while writes to them wait")
        case ("vacuum", _) where has("full"), ("cluster", _):
            report("table-rewrite", "\(first.uppercased())\(first == "vacuum" ? " FULL" : "") rewrites the table under an ACCESS EXCLUSIVE lock: reads and writes wait until it ends")
        case ("refresh", "materialized") where !has("concurrently"):
            report("table-rewrite", "REFRESH MATERIALIZED VIEW without CONCURRENTLY locks the view against reads until it is rebuilt")
        case ("set", _) where words.prefix(3).contains("lock_timeout"):
            if statement.tokens.contains(where: { $0.kind == .number("0") || $0.kind == .string("0") || $0.kind == .string("0s") || $0.kind == .string("0ms") }) {
                report("lock-timeout-disabled", "SET lock_timeout = 0 lets a statement wait for a lock forever, and every query queues behind it")
            }
        default:
            break
        }
    }

    private mutating func checkTransactionControl(first: String, second: String) {
        let begins = first == "begin" || (first == "start" && second == "transaction")
        let ends = ["commit", "rollback", "end", "abort"].contains(first) && !(first == "rollback" && has("to"))
        guard begins || ends else { return }
        if migration.isTransactional {
            report("transaction-control", "\(words.prefix(first == "start" ? 2 : 1).joined(separator: " ").uppercased()) in a migration the runner wraps in a transaction: `up` refuses the file")
        } else if begins {
            if let open = openTransaction {
                report("transaction-nesting", "BEGIN inside the transaction opened at line \(open): PostgreSQL does not nest them, and the first COMMIT commits both")
            } else {
                openTransaction = statement.line
            }
        } else {
            openTransaction = nil
        }
    }

    private mutating func checkAlterType() {
        if has("add", "value") {
            if has("before") || has("after") {
                report("enum-value-order", "ADD VALUE … \(has("before") ? "BEFORE" : "AFTER") inserts the value inside the enum's order: ORDER BY and comparisons of existing queries change")
            }
            if migration.isTransactional, let value = statement.tokens.first(where: { if case .string = $0.kind { true } else { false } }),
               case .string(let text) = value.kind {
                addedEnumValues.insert(text)
            }
        } else if has("rename", "value") {
            report("enum-value-order", "RENAME VALUE breaks the previous release still running, which reads and writes the old value")
        }
    }

    private mutating func checkEnumValueUse() {
        guard !addedEnumValues.isEmpty, !has("alter", "type") else { return }
        for token in statement.tokens {
            if case .string(let text) = token.kind, addedEnumValues.contains(text) {
                report("enum-value-in-transaction", "'\(text)' was added to its enum earlier in this transaction and cannot be used before it commits (SQLSTATE 55P04)")
                return
            }
        }
    }

    // MARK: Reporting

    /// The statement's table as a message names it.
    var quoted: String { "\"\(shape.tableKey ?? "?")\"" }

    /// The index a CREATE INDEX or DROP INDEX statement names, lowercased unless quoted.
    private func indexName(after start: Int? = nil) -> String? {
        let tokens = statement.tokens
        var index = start ?? 2
        while index < tokens.count, let word = tokens[index].word, ["concurrently", "if", "not", "exists", "index"].contains(word) { index += 1 }
        guard index < tokens.count, let name = tokens[index].name, tokens[index].word != "on" else { return nil }
        return name
    }

    /// Adds the finding of `rule` for the current statement unless a comment silences it;
    /// with live sizes it names the table's size and `effect` ("rewrites a 40 GB table"),
    /// and lowers a size-dependent error on a small table to a warning.
    mutating func report(_ ruleID: String, _ message: String, effect: String? = nil) {
        guard !MigrationLinter.ignored(ruleID, by: statement) else { return }
        var result = finding(ruleID, line: statement.line, message: message)
        result.table = shape.tableKey
        result.statement = statement.text
        if let key = shape.tableKey, let size = linter.tableSizes?[key] {
            result.tableBytes = size.bytes
            result.message += " — \"\(key)\" is \(size.description)"
            if let effect { result.message += ": this \(effect) a \(TableSize.format(bytes: size.bytes)) table" }
            if LintRule.named(ruleID)?.growsWithTable == true, size.bytes < MigrationLinter.smallTableBytes, result.severity == .error {
                result.severity = .warning
                result.message += " (small enough today for the lock to be brief)"
            }
        }
        findings.append(result)
    }

    func finding(_ ruleID: String, line: Int, message: String) -> LintFinding {
        let rule = LintRule.named(ruleID)
        return LintFinding(rule: ruleID, severity: rule?.severity ?? .error, file: migration.fileName, line: line,
                           message: message, hint: rule?.fix ?? "", table: nil, tableBytes: nil, lock: rule?.lock,
                           statement: nil, documentation: rule?.documentationPath)
    }
}
