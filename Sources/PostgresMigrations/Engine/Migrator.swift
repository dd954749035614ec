import Foundation
import PostgresClient

/// Applies and reverts the migrations of a folder on a database, safely when many servers
/// run it at once.
///
/// ```swift
/// let migrator = Migrator(configuration: try Configuration(url: url),
///                         directory: try MigrationDirectory(path: "migrations"))
/// let applied = try await migrator.up()        // at deploy, or at app start-up
/// ```
///
/// - **One runner at a time**: a session-level advisory lock on a connection of its own,
///   taken with `pg_try_advisory_lock` and back-off (never a blocking wait inside a
///   transaction). What to run is computed only once the lock is held, so two runners
///   started together apply each migration exactly once.
/// - **All or nothing**: a migration and its history row commit in one transaction. A
///   `-- migrate:no-transaction` file runs statement by statement, its progress recorded
///   after each, and a later run resumes after the last statement that succeeded.
/// - **Short lock waits**: each migration runs with `lock_timeout` and `statement_timeout`;
///   on a lock timeout it is retried with back-off, and the sessions that blocked it are
///   reported from `pg_blocking_pids()`.
/// - **No invalid indexes left behind** by `CREATE INDEX CONCURRENTLY`.
///
/// Errors are ``MigrationError``s. Core Data has no equivalent: its migrations transform a
/// store file that one process owns.
public struct Migrator: Sendable {
    /// The database.
    public let configuration: Configuration
    /// The migrations.
    public let directory: MigrationDirectory
    /// Timeouts, retries and permissions.
    public let options: MigratorOptions
    private let onEvent: @Sendable (MigrationEvent) -> Void

    /// A runner of `directory` on the database of `configuration`; `onEvent` hears progress (from any thread).
    public init(configuration: Configuration, directory: MigrationDirectory, options: MigratorOptions = MigratorOptions(),
                onEvent: @escaping @Sendable (MigrationEvent) -> Void = { _ in }) {
        self.configuration = configuration
        self.directory = directory
        self.options = options
        self.onEvent = onEvent
    }

    var history: MigrationHistory { MigrationHistory(table: options.historyTable) }

    // MARK: Reading

    /// The state of every migration, without taking the lock.
    public func status() async throws -> [MigrationStatus] {
        try await planner().statuses()
    }

    /// The files and the history, ready for planning (what `plan` prints).
    public func planner() async throws -> MigrationPlanner {
        try await withConnection(role: "status") { connection in
            MigrationPlanner(migrations: directory.migrations, history: try await wrap { try await history.rows(on: connection) })
        }
    }

    /// Checks that the database matches the folder: no edited, missing or half-applied
    /// migrations and no invalid index. Returns the problems (empty when all is well).
    public func verify() async throws -> [String] {
        try await withConnection(role: "verify") { connection in try await verify(on: connection) }
    }

    private func verify(on connection: Connection) async throws -> [String] {
        let planner = MigrationPlanner(migrations: directory.migrations, history: try await wrap { try await history.rows(on: connection) })
        var problems: [String] = []
        for status in planner.statuses() {
            switch status.state {
            case .edited:
                problems.append("\(status.fileName ?? status.name): edited after it was applied (recorded \(status.applied!.checksum), file \(status.checksum!))")
            case .missing:
                problems.append("\(status.version) \(status.name): applied, but no file has this version")
            case .partial:
                problems.append("\(status.fileName ?? status.name): stopped after \(status.applied?.statementsApplied ?? 0) statements; run up to finish it")
            case .outOfOrder:
                problems.append("\(status.fileName ?? status.name): pending with a version lower than an applied one")
            case .applied, .pending, .baseline:
                break
            }
        }
        for index in try await wrap({ try await Self.invalidIndexes(on: connection) }).sorted() {
            problems.append("index \(index) is invalid (an interrupted CREATE INDEX CONCURRENTLY?): drop it or REINDEX it")
        }
        return problems
    }

    /// Runs the `-- migrate:verify` section of every applied migration again, in one
    /// read-only transaction that is rolled back; returns the checks that fail (as sqitch's
    /// `verify`).
    public func runVerifySections() async throws -> [MigrationError] {
        try await withConnection(role: "verify") { connection in
            let rows = try await wrap { try await history.rows(on: connection) }
            let applied = Set(rows.filter { $0.kind == .migration && $0.isComplete }.map(\.version))
            var failures: [MigrationError] = []
            try await wrap { try await connection.execute(script: "BEGIN READ ONLY") }
            for migration in directory.migrations where applied.contains(migration.version) {
                for statement in try migration.verify?.statements(file: migration.fileName) ?? [] {
                    try await wrap { try await connection.execute(script: "SAVEPOINT verify") }
                    do {
                        try await connection.execute(script: statement.text)
                        try await connection.execute(script: "RELEASE SAVEPOINT verify")
                    } catch let error as PostgresError {
                        let line = statement.line + MigrationSession.newlines(in: statement.text, before: error.position)
                        failures.append(.verificationFailed(file: migration.fileName, line: line, statement: statement.text, underlying: error))
                        try await wrap { try await connection.execute(script: "ROLLBACK TO SAVEPOINT verify") }
                    }
                }
            }
            // Closing the connection would end the transaction too; this says so.
            try await wrap { try await connection.execute(script: "ROLLBACK") }
            return failures
        }
    }

    // MARK: Changing

    /// Applies pending migrations (up to `target`, inclusive), first finishing any
    /// non-transactional migration a previous run left half done. Returns what it applied.
    @discardableResult
    ///
    /// Traced (swift-distributed-tracing): a span `migrate up` around the run, and a child
    /// span `migration <version>` per migration applied, with the database attributes
    /// (`db.system`, `db.namespace`) and the migration's version, name and statement count.
    ///
    /// Then, when `target` is nil, the repeatable migrations that are new or changed since
    /// they last ran, in name order. The `beforeMigrate` callbacks run once the lock is
    /// held, the `afterMigrate` ones after the last migration.
    public func up(to target: MigrationVersion? = nil) async throws -> [Migration] {
        try await traced("migrate up") { _ in
            try await locked { session in
                let plan = try MigrationPlanner(migrations: directory.migrations, history: session.rows)
                    .upPlan(to: target, allowOutOfOrder: options.allowOutOfOrder)
                let repeatables = target == nil ? try await pendingRepeatables(on: session.work) : []
                // A file that cannot be split into statements stops the run before any migration applies.
                for migration in plan + repeatables {
                    _ = try migration.up.statements(file: migration.fileName)
                    _ = try MigrationSession.Around(migration, directory: directory)
                }
                for callback in directory.callbacks { _ = try callback.script.statements(file: callback.fileName) }
                try await session.runCallbacks(.beforeMigrate)
                for migration in plan {
                    let row = session.rows.first { $0.version == migration.version }
                    try await traced("migration \(migration.version)", migration) { _ in
                        try await session.apply(migration, resumingFrom: row)
                    }
                }
                if !repeatables.isEmpty {
                    try await wrap { try await repeatableHistory.create(on: session.work) }
                    for migration in repeatables {
                        try await traced("migration \(migration.fileName)", migration) { _ in
                            try await session.applyRepeatable(migration, history: repeatableHistory)
                        }
                    }
                }
                try await session.runCallbacks(.afterMigrate)
                return plan + repeatables
            }
        }
    }

    var repeatableHistory: RepeatableHistory { RepeatableHistory(table: options.historyTable + "_repeatable") }

    /// The repeatable migrations `up` would run: new ones and those whose checksum changed.
    public func pendingRepeatables() async throws -> [Migration] {
        guard !directory.repeatables.isEmpty else { return [] }
        return try await withConnection(role: "status") { connection in try await pendingRepeatables(on: connection) }
    }

    private func pendingRepeatables(on connection: Connection) async throws -> [Migration] {
        guard !directory.repeatables.isEmpty else { return [] }
        let recorded = try await wrap { try await repeatableHistory.checksums(on: connection) }
        return directory.repeatables.filter { recorded[$0.fileName] != $0.checksum }
    }

    /// Reverts the last `steps` migrations, or every one above `target`, newest first, each
    /// with its down section and history row removal in one transaction.
    @discardableResult
    public func down(steps: Int? = nil, to target: MigrationVersion? = nil) async throws -> [Migration] {
        try await traced("migrate down") { _ in
            try await locked { session in
                let plan = try MigrationPlanner(migrations: directory.migrations, history: session.rows).downPlan(steps: steps, to: target)
                for (migration, _) in plan { _ = try migration.down?.statements(file: migration.fileName) }
                for (migration, row) in plan {
                    try await traced("revert \(migration.version)", migration) { _ in
                        try await session.revert(migration, row: row)
                    }
                }
                return plan.map(\.0)
            }
        }
    }

    /// Adopts a database whose schema already exists: records `version` as a baseline, so
    /// that every migration up to it counts as applied and `up` starts after it. Refused
    /// when the history already has rows.
    public func baseline(_ version: MigrationVersion) async throws {
        try await locked { session in
            guard session.rows.isEmpty else {
                throw MigrationError.baselineRefused("the history table already has \(session.rows.count) row\(session.rows.count == 1 ? "" : "s"); a baseline adopts a database that has none")
            }
            let file = directory.migrations.first { $0.version == version }
            try await wrap {
                try await history.recordBaseline(version, name: file?.name ?? "baseline", checksum: file?.checksum ?? MigrationChecksum(text: "none"),
                                                 appliedBy: session.appliedBy, on: session.work)
            }
        }
    }

    /// Records the files' current checksums for applied migrations that were edited, after
    /// a reviewer decided the edits are harmless (whitespace, comments). Returns their versions.
    @discardableResult
    public func repair() async throws -> [MigrationVersion] {
        try await locked { session in
            let edited = MigrationPlanner(migrations: directory.migrations, history: session.rows).statuses().filter { $0.state == .edited }
            for status in edited {
                try await wrap { try await history.updateChecksum(status.applied!.version, to: status.checksum!, on: session.work) }
            }
            return edited.map(\.version)
        }
    }

    // MARK: Sessions

    /// Connects with an `application_name` saying what the connection does, unless the
    /// configuration names one.
    func connect(role: String) async throws -> Connection {
        var configuration = configuration
        if configuration["application_name"] == nil { configuration["application_name"] = "postgres-data \(role)" }
        return try await wrap { try await Connection.connect(configuration, logger: options.logger) }
    }

    /// Takes the migration lock on a connection of its own, opens the working connection,
    /// creates the history table if needed and runs `body`; always releases the lock.
    private func locked<Value: Sendable>(_ body: (MigrationSession) async throws -> Value) async throws -> Value {
        try await withConnection(role: "lock") { lock in
            let key = "postgres-data:" + options.historyTable
            try await acquire(key, on: lock)
            let outcome: Result<Value, Error>
            do {
                outcome = .success(try await withConnection(role: "migrate") { work in
                    try await body(try await session(work: work, observer: lock, lockKey: key))
                })
            } catch {
                outcome = .failure(error)
            }
            _ = try? await lock.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", key)
            return try outcome.get()
        }
    }

    private func session(work: Connection, observer lock: Connection, lockKey: String) async throws -> MigrationSession {
        try await wrap {
            if await work.serverVersion >= 140000 {
                // A statement whose runner died is cancelled instead of running on.
                try await work.execute(script: "SET client_connection_check_interval = '1s'")
            }
            try await history.create(on: work)
            let user = try await work.query("SELECT current_user::text")[0].decode(String.self, at: 0)
            let appliedBy = "\(user) on \(ProcessInfo.processInfo.hostName), pid \(getpid())"
            return MigrationSession(migrator: self, work: work, observer: lock, rows: try await history.rows(on: work),
                                    appliedBy: appliedBy, lockKey: lockKey, onEvent: onEvent)
        }
    }

    /// Runs `body` on a new connection and closes it afterwards.
    func withConnection<Result>(role: String, _ body: (Connection) async throws -> Result) async throws -> Result {
        let connection = try await connect(role: role)
        do {
            let result = try await body(connection)
            await connection.close()
            return result
        } catch {
            await connection.close()
            throw error
        }
    }

    private func acquire(_ key: String, on lock: Connection) async throws {
        let clock = ContinuousClock()
        let start = clock.now
        var delay = Duration.milliseconds(50)
        var announced = false
        while true {
            if try await wrap({ try await lock.query("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", key)[0].decode(Bool.self, at: 0) }) {
                onEvent(.acquiredMigrationLock)
                return
            }
            let waited = clock.now - start
            if waited >= options.migrationLockWait {
                throw MigrationError.migrationLockTimeout(waited: waited, holder: try? await LockBlocker.holding(advisoryKey: key, on: lock))
            }
            if !announced {
                announced = true
                onEvent(.waitingForMigrationLock(holder: try? await LockBlocker.holding(advisoryKey: key, on: lock)))
            }
            try await Task.sleep(for: delay * Double.random(in: 0.75...1.25))
            delay = min(delay * 2, .seconds(2))
        }
    }

    static func invalidIndexes(on connection: Connection) async throws -> Set<String> {
        Set(try await connection.query("""
            SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE NOT i.indisvalid
            """).map { try $0.decode(String.self, at: 0) })
    }
}

/// Runs `body`, turning a ``PostgresError`` into ``MigrationError/database(_:)``.
@discardableResult
func wrap<Result>(_ body: () async throws -> Result) async throws -> Result {
    do {
        return try await body()
    } catch let error as PostgresError {
        throw MigrationError.database(error)
    }
}
