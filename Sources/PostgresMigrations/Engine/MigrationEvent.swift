import Logging

/// What a ``Migrator`` is doing, for a progress display or a log.
public enum MigrationEvent: Sendable {
    /// Another runner holds the migration lock; this one waits (with back-off).
    case waitingForMigrationLock(holder: LockBlocker?)
    /// The lock is held; planning starts.
    case acquiredMigrationLock
    /// A migration starts (`resumingAt` is the statement a resumed run starts from, 0 otherwise).
    case started(Migration, direction: Direction, statementCount: Int, resumingAt: Int)
    /// A statement of a migration finished.
    case statementFinished(Migration, index: Int, statementCount: Int)
    /// A statement hit `lock_timeout`; the migration is retried after `delay`.
    case retrying(Migration, attempt: Int, delay: Duration, blockers: [LockBlocker])
    /// A migration finished.
    case finished(Migration, direction: Direction, duration: Duration)

    /// Applying (up) or reverting (down).
    public enum Direction: String, Sendable, Codable {
        case up, down
    }
}
