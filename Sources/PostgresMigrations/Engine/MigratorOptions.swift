import Logging

/// How a ``Migrator`` runs: timeouts, retries, and what it allows.
public struct MigratorOptions: Sendable {
    /// Where the server's notices (`RAISE NOTICE` in a migration) and connection events go.
    public var logger = Logger(label: "PostgresMigrations")
    /// The history table (in the connection's `search_path` schema).
    public var historyTable = "postgres_data_migrations"
    /// `lock_timeout` of every migration that does not set its own: how long one statement
    /// may wait for a lock before it fails and the migration is retried. Short, so that a
    /// migration waiting behind a long transaction does not stall every query queued behind it.
    public var lockTimeout = "5s"
    /// `statement_timeout` of every migration that does not set its own.
    public var statementTimeout = "30min"
    /// How many times a migration that hit `lock_timeout` is retried.
    public var lockRetries = 5
    /// The first wait before a retry; it doubles each time, up to ``maximumRetryDelay``.
    public var retryDelay: Duration = .seconds(1)
    /// The longest wait between two retries.
    public var maximumRetryDelay: Duration = .seconds(30)
    /// How long to wait for another runner that holds the migration lock.
    public var migrationLockWait: Duration = .seconds(600)
    /// Runs pending migrations whose versions are lower than an applied one.
    public var allowOutOfOrder = false
    /// When `CREATE INDEX CONCURRENTLY … IF NOT EXISTS` finds an invalid index, `REINDEX` it
    /// concurrently instead of failing.
    public var rebuildInvalidIndexes = false

    /// The defaults: lock_timeout 5s, statement_timeout 30min, 5 retries from 1 s, 10 minutes for the migration lock.
    public init() {}
}
