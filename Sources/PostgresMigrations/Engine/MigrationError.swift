import Foundation
import PostgresClient

/// Why the migration tool refused to run or stopped, with what to do about it.
///
/// Every case names the file (and line, when there is one); server errors keep the
/// `PostgresError` with its SQLSTATE, message, detail and hint.
public enum MigrationError: Error, Sendable, CustomStringConvertible {
    /// A file in the migrations folder cannot be read as a migration.
    case invalidFile(file: String, line: Int?, message: String)
    /// The folder's files differ from its `postgres-data.sum` (``MigrationSum``).
    case sumMismatch(file: String, problems: [String])
    /// Two files have the same version.
    case duplicateVersion(MigrationVersion, files: [String])
    /// An applied migration's file changed since it was applied.
    case edited(file: String, version: MigrationVersion, recorded: MigrationChecksum, current: MigrationChecksum)
    /// Pending migrations have lower versions than one already applied.
    case outOfOrder(files: [String], highestApplied: MigrationVersion)
    /// `--to` names a version that no file and no history row has.
    case unknownVersion(String)
    /// `down` on a migration without a `-- migrate:down` section.
    case noDownSection(file: String)
    /// A statement failed; the migration was rolled back (or, outside a transaction, stopped after the statements before it).
    case statementFailed(file: String, line: Int, statement: String, underlying: PostgresError)
    /// A statement of a migration's `-- migrate:verify` section failed: the migration was
    /// rolled back (or, outside a transaction, left partial), or `verify --scripts` found
    /// an applied migration whose check no longer holds.
    case verificationFailed(file: String, line: Int, statement: String, underlying: PostgresError)
    /// A statement waited longer than `lock_timeout` for a lock on every attempt.
    case lockTimeout(file: String, line: Int, attempts: Int, blockers: [LockBlocker], underlying: PostgresError)
    /// Another runner held the migration lock longer than the runner was willing to wait.
    case migrationLockTimeout(waited: Duration, holder: LockBlocker?)
    /// The connection holding the migration lock was lost mid-run; the runner stopped before
    /// the next migration or statement.
    case migrationLockLost
    /// `CREATE INDEX CONCURRENTLY` (or `REINDEX CONCURRENTLY`) left an invalid index; it was dropped.
    case invalidIndex(file: String, line: Int, indexes: [String], underlying: PostgresError?)
    /// `BEGIN`, `COMMIT` or `ROLLBACK` in a migration the runner wraps in a transaction.
    case transactionControl(file: String, line: Int)
    /// `baseline` on a database whose history already has migrations.
    case baselineRefused(String)
    /// The database could not be reached or a bookkeeping query failed.
    case database(PostgresError)

    public var description: String {
        switch self {
        case .invalidFile(let file, let line, let message):
            return "\(location(file, line)): \(message)"
        case .sumMismatch(let file, let problems):
            return "\(file) does not match the folder: \(problems.joined(separator: "; ")). "
                + "Review the change (an applied migration must not change; a merge may have brought migrations in an order nobody checked), "
                + "then record the folder with `postgres-data hash`."
        case .duplicateVersion(let version, let files):
            return "version \(version) is used by \(files.joined(separator: " and ")): give each file its own version"
        case .edited(let file, let version, let recorded, let current):
            return "\(file): migration \(version) was applied with checksum \(recorded), the file now has \(current). "
                + "An applied migration must not change: revert the edit and write a new migration"
                + " (or, if the change is harmless, record the new checksum with `postgres-data repair`)."
        case .outOfOrder(let files, let highest):
            return "\(files.joined(separator: ", ")) \(files.count == 1 ? "has a version" : "have versions") lower than \(highest), "
                + "which is already applied. Renumber \(files.count == 1 ? "it" : "them") above \(highest), or run with --allow-out-of-order."
        case .unknownVersion(let version):
            return "no migration has the version \(version)"
        case .noDownSection(let file):
            return "\(file) has no '-- migrate:down' section, so it cannot be reverted"
        case .statementFailed(let file, let line, let statement, let error):
            return "\(location(file, line)): \(Self.describe(error))\n  in: \(Self.excerpt(statement))"
        case .verificationFailed(let file, let line, let statement, let error):
            return "\(location(file, line)): the verify section's check failed: \(Self.describe(error))\n  in: \(Self.excerpt(statement))"
        case .lockTimeout(let file, let line, let attempts, let blockers, let error):
            var text = "\(location(file, line)): could not get a lock within lock_timeout after \(attempts) attempt\(attempts == 1 ? "" : "s") (\(error.message))"
            if blockers.isEmpty {
                text += "\n  no blocking session was seen (it may have ended meanwhile)"
            } else {
                text += "\n  blocked by:" + blockers.map { "\n    \($0)" }.joined()
            }
            return text + "\n  " + Self.advice(for: blockers)
        case .migrationLockTimeout(let waited, let holder):
            return "another runner held the migration lock for \(waited) and this one stopped waiting"
                + (holder.map { "; it is \($0)" } ?? "")
        case .migrationLockLost:
            return "the connection holding the migration lock was lost (terminated?), so another runner may have started: "
                + "stopped before running anything more. Run up again; a half-done non-transactional migration resumes."
        case .invalidIndex(let file, let line, let indexes, let error):
            var text = "\(location(file, line)): the statement left the invalid index \(indexes.joined(separator: ", ")); it was dropped again"
            if let error { text += ". The statement failed: \(Self.describe(error))" }
            return text + ". Fix the cause and run again (or pass --rebuild-invalid-indexes to REINDEX instead of failing)."
        case .transactionControl(let file, let line):
            return "\(location(file, line)): BEGIN, COMMIT and ROLLBACK do not belong in a migration: each migration already runs in a "
                + "transaction of its own. Remove them, or add '-- migrate:no-transaction' to run the statements one by one."
        case .baselineRefused(let reason):
            return "baseline refused: \(reason)"
        case .database(let error):
            return Self.describe(error)
        }
    }

    /// What to do about the sessions holding the lock: an idle transaction has no statement
    /// to cancel, so only ending its session releases its locks.
    static func advice(for blockers: [LockBlocker]) -> String {
        let idle = blockers.filter { $0.state?.hasPrefix("idle in transaction") == true }.map(\.pid)
        let active = blockers.filter { $0.state?.hasPrefix("idle in transaction") != true }.map(\.pid)
        var parts: [String] = []
        if !active.isEmpty {
            parts.append("cancel the statement of \(active.map { "pid \($0)" }.joined(separator: ", ")) with pg_cancel_backend(pid)")
        }
        if !idle.isEmpty {
            parts.append("end the idle transaction of \(idle.map { "pid \($0)" }.joined(separator: ", ")) with pg_terminate_backend(pid) (pg_cancel_backend does nothing to a session between statements)")
        }
        return parts.isEmpty ? "Retry when the blocking transactions are done." : "Retry when they are done, or " + parts.joined(separator: "; ") + "."
    }

    /// The sessions that blocked the migration (a lock timeout) or held the migration lock.
    public var blockers: [LockBlocker] {
        switch self {
        case .lockTimeout(_, _, _, let blockers, _): blockers
        case .migrationLockTimeout(_, let holder): holder.map { [$0] } ?? []
        default: []
        }
    }

    /// The file and line the error is about, when there is one.
    public var file: (name: String, line: Int?)? {
        switch self {
        case .invalidFile(let file, let line, _): (file, line)
        case .edited(let file, _, _, _), .noDownSection(let file): (file, nil)
        case .statementFailed(let file, let line, _, _), .lockTimeout(let file, let line, _, _, _), .verificationFailed(let file, let line, _, _),
             .invalidIndex(let file, let line, _, _), .transactionControl(let file, let line): (file, line)
        default: nil
        }
    }

    private func location(_ file: String, _ line: Int?) -> String {
        line.map { "\(file):\($0)" } ?? file
    }

    /// The server's message, SQLSTATE, detail and hint on one or more lines.
    static func describe(_ error: PostgresError) -> String {
        var text = error.message
        if let state = error.sqlState { text += " (SQLSTATE \(state))" }
        if let detail = error.detail { text += "\n  DETAIL: \(detail)" }
        if let hint = error.hint { text += "\n  HINT: \(hint)" }
        return text
    }

    static func excerpt(_ statement: String) -> String {
        let oneLine = statement.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        return oneLine.count > 160 ? String(oneLine.prefix(160)) + "…" : oneLine
    }

    /// The SQLSTATE of the server error inside, if any.
    public var sqlState: SQLState? { underlying?.sqlState }

    /// The server error inside, if any.
    public var underlying: PostgresError? {
        switch self {
        case .statementFailed(_, _, _, let error), .lockTimeout(_, _, _, _, let error), .database(let error),
             .verificationFailed(_, _, _, let error): error
        case .invalidIndex(_, _, _, let error): error
        default: nil
        }
    }
}
