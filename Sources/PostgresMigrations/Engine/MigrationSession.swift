import Foundation
import PostgresClient

/// One locked run of the migrator: the working connection, the lock connection (which also
/// watches for blockers) and the history as read after the lock was taken.
struct MigrationSession {
    let migrator: Migrator
    let work: Connection
    let observer: Connection
    let rows: [AppliedMigration]
    let appliedBy: String
    /// The advisory lock's key text.
    let lockKey: String
    let onEvent: @Sendable (MigrationEvent) -> Void

    private var options: MigratorOptions { migrator.options }
    private var history: MigrationHistory { migrator.history }

    /// Applies `migration`; `row` is its history row when a previous run left it half done.
    /// The `beforeEachMigrate` callbacks run first, then the up section, its verify section
    /// and the `afterEachMigrate` callbacks — in its transaction when it has one.
    func apply(_ migration: Migration, resumingFrom row: AppliedMigration?) async throws {
        try await ensureLockHeld()
        let statements = try migration.up.statements(file: migration.fileName)
        let around = try Around(migration, directory: migrator.directory)
        let clock = ContinuousClock()
        let start = clock.now
        if migration.isTransactional {
            try refuseTransactionControl(statements, in: migration)
            onEvent(.started(migration, direction: .up, statementCount: statements.count, resumingAt: 0))
            // A staged migration's custom step: its code, then its record (run again, whole,
            // after a run that died in between).
            if let action = migration.action { try await action() }
            try await runInTransaction(statements, of: migration, around: around) { connection in
                try await history.recordApplied(migration, duration: clock.now - start, appliedBy: appliedBy, on: connection)
            }
        } else {
            let done = row?.statementsApplied ?? 0
            onEvent(.started(migration, direction: .up, statementCount: statements.count, resumingAt: done))
            if row == nil {
                try await wrap { try await history.recordStarted(migration, appliedBy: appliedBy, on: work) }
                try await runOutsideTransaction(around.before, of: migration)
            }
            try await runOneByOne(statements, of: migration, from: done) { index in
                try await history.recordProgress(migration, statementsApplied: index + 1, on: work)
            }
            try await runOutsideTransaction(around.checks + around.after, of: migration)
            try await wrap { try await history.recordCompleted(migration, duration: clock.now - start, on: work) }
        }
        onEvent(.finished(migration, direction: .up, duration: clock.now - start))
    }

    /// Applies a repeatable migration and records its checksum; outside a transaction it
    /// runs whole again after a failure (so its statements must be harmless twice).
    func applyRepeatable(_ migration: Migration, history repeatables: RepeatableHistory) async throws {
        try await ensureLockHeld()
        let statements = try migration.up.statements(file: migration.fileName)
        let around = try Around(migration, directory: migrator.directory)
        let clock = ContinuousClock()
        let start = clock.now
        onEvent(.started(migration, direction: .up, statementCount: statements.count, resumingAt: 0))
        if migration.isTransactional {
            try refuseTransactionControl(statements, in: migration)
            try await runInTransaction(statements, of: migration, around: around) { connection in
                try await repeatables.record(migration, duration: clock.now - start, appliedBy: appliedBy, on: connection)
            }
        } else {
            try await runOutsideTransaction(around.before, of: migration)
            try await runOneByOne(statements, of: migration, from: 0) { _ in }
            try await runOutsideTransaction(around.checks + around.after, of: migration)
            try await wrap { try await repeatables.record(migration, duration: clock.now - start, appliedBy: appliedBy, on: work) }
        }
        onEvent(.finished(migration, direction: .up, duration: clock.now - start))
    }

    /// Runs the callbacks of a once-per-run event, each file in a transaction of its own.
    func runCallbacks(_ event: MigrationCallback.Event) async throws {
        for callback in migrator.directory.callbacks(event) {
            try await ensureLockHeld()
            let statements = try callback.script.statements(file: callback.fileName)
            try await wrap {
                try await work.withTransaction { _ in
                    for statement in statements { try await run(statement, file: callback.fileName) }
                }
            }
        }
    }

    /// What runs around a migration's own statements: the each-migration callbacks and its
    /// verify section, with the file each statement comes from.
    struct Around {
        var before: [(SQLStatement, file: String, isCheck: Bool)] = []
        var checks: [(SQLStatement, file: String, isCheck: Bool)] = []
        var after: [(SQLStatement, file: String, isCheck: Bool)] = []

        init(_ migration: Migration, directory: MigrationDirectory) throws {
            for callback in directory.callbacks(.beforeEachMigrate) {
                before += try callback.script.statements(file: callback.fileName).map { ($0, callback.fileName, false) }
            }
            checks = try (migration.verify?.statements(file: migration.fileName) ?? []).map { ($0, migration.fileName, true) }
            for callback in directory.callbacks(.afterEachMigrate) {
                after += try callback.script.statements(file: callback.fileName).map { ($0, callback.fileName, false) }
            }
        }
    }

    private func runOutsideTransaction(_ statements: [(SQLStatement, file: String, isCheck: Bool)], of migration: Migration) async throws {
        for (statement, file, isCheck) in statements {
            try await ensureLockHeld()
            try await retryingLockTimeouts(migration) { try await run(statement, file: file, isCheck: isCheck) }
        }
    }

    /// Runs the down section of `migration` and removes its history row, in one transaction
    /// unless the file says `-- migrate:no-transaction`.
    func revert(_ migration: Migration, row: AppliedMigration) async throws {
        try await ensureLockHeld()
        guard let down = migration.down else { throw MigrationError.noDownSection(file: migration.fileName) }
        let statements = try down.statements(file: migration.fileName)
        let clock = ContinuousClock()
        let start = clock.now
        onEvent(.started(migration, direction: .down, statementCount: statements.count, resumingAt: 0))
        if migration.isTransactional {
            try refuseTransactionControl(statements, in: migration)
            try await runInTransaction(statements, of: migration) { connection in
                try await history.remove(row.version, on: connection)
            }
        } else {
            try await runOneByOne(statements, of: migration, from: 0) { _ in }
            try await wrap { try await history.remove(row.version, on: work) }
        }
        onEvent(.finished(migration, direction: .down, duration: clock.now - start))
    }

    /// Runs the statements and `finish` (the history change) in one transaction, with what
    /// runs `around` them, again from the start after a lock timeout.
    private func runInTransaction(_ statements: [SQLStatement], of migration: Migration, around: Around? = nil,
                                  finish: @escaping (Connection) async throws -> Void) async throws {
        try await retryingLockTimeouts(migration) {
            try await work.withTransaction { connection in
                try await setTimeouts(for: migration, local: true)
                for (statement, file, _) in around?.before ?? [] { try await run(statement, file: file) }
                for (index, statement) in statements.enumerated() {
                    try await run(statement, of: migration)
                    onEvent(.statementFinished(migration, index: index, statementCount: statements.count))
                }
                for (statement, file, isCheck) in (around?.checks ?? []) + (around?.after ?? []) {
                    try await run(statement, file: file, isCheck: isCheck)
                }
                try await wrap { try await finish(connection) }
            }
        }
    }

    /// Runs the statements from `first` on outside a transaction (each commits alone), calling
    /// `recorded` after each; a lock timeout retries only the statement that hit it.
    private func runOneByOne(_ statements: [SQLStatement], of migration: Migration, from first: Int,
                             recorded: (Int) async throws -> Void) async throws {
        try await setTimeouts(for: migration, local: false)
        for (index, statement) in statements.enumerated() where index >= first {
            try await ensureLockHeld()
            try await retryingLockTimeouts(migration) { try await runWatchingIndexes(statement, of: migration) }
            try await wrap { try await recorded(index) }
            onEvent(.statementFinished(migration, index: index, statementCount: statements.count))
        }
        try await wrap { try await work.execute(script: "RESET lock_timeout; RESET statement_timeout") }
    }

    /// Fails when the lock connection no longer holds the migration lock (its backend was
    /// terminated, say): another runner may have started, so nothing more may run. A
    /// transactional migration is safe regardless (its history row's primary key), a
    /// statement outside a transaction is not.
    private func ensureLockHeld() async throws {
        let held: Bool
        do {
            held = try await observer.query("""
                SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
                               AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0))
                """, lockKey)[0].decode(Bool.self, at: 0)
        } catch {
            held = false
        }
        guard held else { throw MigrationError.migrationLockLost }
    }

    private func refuseTransactionControl(_ statements: [SQLStatement], in migration: Migration) throws {
        for statement in statements {
            let words = statement.words
            if let first = words.first, ["begin", "commit", "rollback", "end", "abort"].contains(first)
                || (first == "start" && words.dropFirst().first == "transaction") {
                throw MigrationError.transactionControl(file: migration.fileName, line: statement.line)
            }
        }
    }

    /// `lock_timeout` and `statement_timeout` for this migration, as bind parameters of `set_config`.
    private func setTimeouts(for migration: Migration, local: Bool) async throws {
        try await wrap {
            try await work.query("SELECT set_config('lock_timeout', $1, $3), set_config('statement_timeout', $2, $3)",
                                 migration.lockTimeout ?? options.lockTimeout, migration.statementTimeout ?? options.statementTimeout, local)
        }
    }

    /// Runs one statement; a failure becomes an error naming the file and line (the line of
    /// the error position when the server gives one), with the sessions that blocked it.
    private func run(_ statement: SQLStatement, of migration: Migration) async throws {
        try await run(statement, file: migration.fileName)
    }

    /// Runs one statement of `file` (a migration or a callback); `isCheck` for a statement
    /// of a verify section, whose failure says so.
    private func run(_ statement: SQLStatement, file: String, isCheck: Bool = false) async throws {
        let watch = BlockerWatch(pid: work.backendPID, observer: observer)
        do {
            try await work.execute(script: statement.text)
            _ = await watch.stop()
        } catch let error as PostgresError {
            let blockers = await watch.stop()
            let line = statement.line + Self.newlines(in: statement.text, before: error.position)
            if error.sqlState == .lockNotAvailable {
                throw MigrationError.lockTimeout(file: file, line: line, attempts: 1, blockers: blockers, underlying: error)
            }
            if isCheck { throw MigrationError.verificationFailed(file: file, line: line, statement: statement.text, underlying: error) }
            throw MigrationError.statementFailed(file: file, line: line, statement: statement.text, underlying: error)
        }
    }

    /// Runs a statement outside a transaction; after one that builds an index concurrently,
    /// checks `pg_index.indisvalid` and never leaves an invalid index behind.
    private func runWatchingIndexes(_ statement: SQLStatement, of migration: Migration) async throws {
        let words = statement.words
        guard words.contains("concurrently"), words.contains("index") || words.first == "reindex" else {
            return try await run(statement, of: migration)
        }
        let target = statement.concurrentIndex
        if let name = target?.index, target?.isReindex == false {
            // A run of this statement that died (killed, timed out) left its index invalid: it
            // is this statement's by name, so it is built again rather than taken as done.
            for stale in try await wrap({ try await Self.invalidIndexes(named: name, on: work) }) {
                try await run(SQLStatement(text: "DROP INDEX CONCURRENTLY IF EXISTS \(stale)", line: statement.line, tokens: [],
                                           leadingComments: []), of: migration)
            }
        }
        let before = try await wrap { try await Migrator.invalidIndexes(on: work) }
        var failure: Error?
        do {
            try await run(statement, of: migration)
        } catch {
            failure = error
        }
        // Only the indexes this statement built: by name when it gives one, else the new
        // invalid ones on its table that no other session is building.
        var invalid = try await wrap { try await Self.invalidIndexes(builtBy: target, excluding: before, on: work) }
        if failure == nil && options.rebuildInvalidIndexes && !invalid.isEmpty {
            for index in invalid.sorted() {
                _ = try await wrap { try await work.execute(script: "REINDEX INDEX CONCURRENTLY \(index)") }
            }
            invalid = try await wrap { try await Self.invalidIndexes(builtBy: target, excluding: before, on: work) }
        }
        if let failure, invalid.isEmpty { throw failure }
        guard !invalid.isEmpty else { return }
        for index in invalid.sorted() {
            // Best effort: what blocked the statement may block this too; the next run drops
            // the index before building it again, and verify reports it meanwhile.
            _ = try? await work.execute(script: "DROP INDEX CONCURRENTLY IF EXISTS \(index)")
        }
        if let failure, case MigrationError.lockTimeout = failure { throw failure }
        throw MigrationError.invalidIndex(file: migration.fileName, line: statement.line, indexes: invalid.sorted(),
                                          underlying: (failure as? MigrationError)?.underlying)
    }

    /// The invalid index called `name` (as a statement writes it), if any.
    static func invalidIndexes(named name: String, on connection: Connection) async throws -> [String] {
        try await connection.query("""
            SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE NOT i.indisvalid AND c.oid = to_regclass($1)
            """, name).map { try $0.decode(String.self, at: 0) }
    }

    /// The invalid indexes a concurrent index statement left: its named index (and, for a
    /// REINDEX, the `_ccnew` copies of it); for an unnamed one, the indexes of its table not
    /// invalid `before` and not being built by another session.
    static func invalidIndexes(builtBy target: SQLStatement.ConcurrentIndex?, excluding before: Set<String>,
                               on connection: Connection) async throws -> Set<String> {
        let rows: [Row]
        if let name = target?.index {
            rows = try await connection.query("""
                SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_index i
                JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                JOIN pg_class named ON named.oid = to_regclass($1)
                WHERE NOT i.indisvalid AND c.relnamespace = named.relnamespace
                  AND (c.oid = named.oid OR ($2 AND c.relname LIKE named.relname || '\\_ccnew%'))
                """, name, target?.isReindex == true).map { $0 }
            return Set(try rows.map { try $0.decode(String.self, at: 0) })
        }
        guard let table = target?.table else { return [] }
        rows = try await connection.query("""
            SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE NOT i.indisvalid AND i.indrelid = to_regclass($1)
              AND NOT EXISTS (SELECT FROM pg_stat_progress_create_index p WHERE p.index_relid = i.indexrelid AND p.pid <> pg_backend_pid())
            """, table).map { $0 }
        return Set(try rows.map { try $0.decode(String.self, at: 0) }).subtracting(before)
    }

    /// Runs `body` again after a lock timeout, with back-off, up to `lockRetries` times.
    private func retryingLockTimeouts(_ migration: Migration, _ body: () async throws -> Void) async throws {
        var attempt = 1
        var delay = options.retryDelay
        var lastSeen: [LockBlocker] = []
        while true {
            do {
                return try await body()
            } catch MigrationError.lockTimeout(let file, let line, _, let seen, let error) {
                // An attempt too short to see its blockers reports those of an earlier one.
                if !seen.isEmpty { lastSeen = seen }
                let blockers = lastSeen
                guard attempt <= options.lockRetries else {
                    throw MigrationError.lockTimeout(file: file, line: line, attempts: attempt, blockers: blockers, underlying: error)
                }
                onEvent(.retrying(migration, attempt: attempt, delay: delay, blockers: blockers))
                try await Task.sleep(for: delay)
                attempt += 1
                delay = min(delay * 2, options.maximumRetryDelay)
            }
        }
    }

    /// How many line breaks precede the 1-based character `position` of `text`.
    static func newlines(in text: String, before position: Int?) -> Int {
        guard let position, position > 1 else { return 0 }
        return text.unicodeScalars.prefix(position - 1).reduce(0) { $0 + ($1 == "\n" ? 1 : 0) }
    }
}
