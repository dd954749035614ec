/// The one error type of `PostgresClient`: what went wrong, with everything the server
/// said about it.
///
/// Server errors carry their ``sqlState`` and the fields PostgreSQL sends (message,
/// detail, hint, position, schema, table, column, constraint). ``Kind`` separates a lost
/// connection from a failed statement, so callers can tell "retry on a new connection"
/// from "fix the statement". The description never contains a password.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public enum Kind: Sendable, Hashable {
        /// A connection URL or option is malformed; nothing was sent.
        case invalidConfiguration
        /// The connection could not be opened (refused, unknown host, authentication).
        case connectionFailed
        /// The connection broke while in use; the statement's outcome may be unknown.
        case connectionLost
        /// The connection was closed by ``Connection/close()`` and cannot be used.
        case connectionClosed
        /// The server rejected a statement; see ``PostgresError/sqlState``.
        case server
        /// The statement was canceled (Task cancellation or ``Connection/cancelCurrentQuery()``); SQLSTATE 57014.
        case canceled
        /// The statement ran past its timeout and was canceled; SQLSTATE 57014.
        case timedOut
        /// A value in a result could not be decoded as the Swift type asked for.
        case decoding
        /// A Swift value could not be encoded as a parameter.
        case encoding
        /// The API was used in a way it does not allow (for example two streams at once).
        case misuse
        /// No pooled connection became free within the lease timeout.
        case poolTimeout
        /// The pool was shut down.
        case poolClosed
        /// The connection was lost after `COMMIT` was sent and before its answer came: the
        /// transaction may or may not have committed. Never retried blindly; see
        /// ``PostgresError/isRetryable``.
        case commitOutcomeUnknown
    }

    public var kind: Kind
    /// The five-character SQLSTATE code, when the server (or the cancel path) gave one.
    public var sqlState: SQLState?
    /// Severity as the server sent it (`ERROR`, `FATAL`, `PANIC`), not localized.
    public var severity: String?
    /// The primary, human-readable message.
    public var message: String
    public var detail: String?
    public var hint: String?
    /// 1-based character position in the statement text where the error was found.
    public var position: Int?
    public var context: String?
    public var schemaName: String?
    public var tableName: String?
    public var columnName: String?
    public var dataTypeName: String?
    public var constraintName: String?
    /// The statement text (never its parameter values) that failed, when there was one.
    public var statement: String?

    public init(
        _ kind: Kind, message: String, sqlState: SQLState? = nil, detail: String? = nil,
        hint: String? = nil, statement: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.hint = hint
        self.statement = statement
    }

    /// True when running the same work again may succeed: serialization failures (40001),
    /// deadlocks (40P01) and connections lost before or during the work.
    public var isRetryable: Bool {
        if kind == .connectionLost { return true }
        guard let sqlState else { return false }
        return sqlState == .serializationFailure || sqlState == .deadlockDetected
    }

    public var description: String {
        var text = "PostgresError.\(kind)"
        if let sqlState { text += " [\(sqlState.code)]" }
        if let severity { text += " \(severity):" }
        text += " \(message)"
        if let detail { text += "\nDETAIL: \(detail)" }
        if let hint { text += "\nHINT: \(hint)" }
        if let constraintName { text += "\nCONSTRAINT: \(constraintName)" }
        if let tableName {
            text += "\nTABLE: \(schemaName.map { "\($0)." } ?? "")\(tableName)"
            if let columnName { text += " COLUMN: \(columnName)" }
        }
        if let statement {
            text += "\nSTATEMENT: \(statement.count > 500 ? String(statement.prefix(500)) + "…" : statement)"
            if let position { text += " (at character \(position))" }
        }
        return text
    }
}
