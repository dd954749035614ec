import CLibPQ
import Foundation

extension Connection {
    /// Runs one statement with its values as bind parameters (`$1`, `$2`, …) and returns
    /// its rows in binary format.
    ///
    /// ```swift
    /// let rows = try await connection.query("SELECT name FROM items WHERE id = $1", id)
    /// ```
    ///
    /// Cancelling the calling task sends a cancel request to the server; the statement then
    /// fails with ``PostgresError/Kind/canceled`` (SQLSTATE 57014) and the connection stays usable.
    @discardableResult
    public func query<each Value: PostgresEncodable>(_ sql: String, _ values: repeat each Value) async throws -> QueryResult {
        let bindings = try PostgresBindings(repeat each values)
        return try await query(sql, bindings: bindings, options: .default)
    }

    /// Runs one statement with prepared bindings and options (a timeout, text results).
    @discardableResult
    public func query(_ sql: String, bindings: PostgresBindings, options: QueryOptions = .default) async throws -> QueryResult {
        try await withCancellation(timeout: options.timeout) { token in
            try run(sql, bindings, format: options.resultFormat, token: token)
        }
    }

    /// Runs one or more statements separated by `;` with the simple query protocol, as
    /// `psql` does: no parameters, text results, one result per statement. Use it for
    /// scripts and DDL; use ``query(_:_:)`` for anything with values.
    @discardableResult
    public func execute(script sql: String, timeout: Duration? = nil) async throws -> [QueryResult] {
        try await withCancellation(timeout: timeout) { token in
            try runSimple(sql, token: token)
        }
    }

    /// Prepares a statement once on this connection, to run it many times without the
    /// server parsing and planning it again (`PQprepare`).
    public func prepare(_ sql: String, parameterTypes: [PostgresType] = []) async throws -> PreparedStatement {
        try await withCancellation(timeout: nil) { token in
            let handle = try readyHandle()
            let started = try begin(token, statement: sql, parameters: 0)
            defer { end(token, statement: sql, since: started) }
            statementCounter += 1
            let name = "pd_statement_\(statementCounter)"
            let oids = parameterTypes.map(\.oid)
            noteSending(sql.utf8.count)
            let sent = oids.withUnsafeBufferPointer {
                PQsendPrepare(handle, name, sql, Int32(oids.count), oids.isEmpty ? nil : $0.baseAddress)
            }
            guard sent == 1 else { throw sendError(handle, statement: sql) }
            _ = try collectResult(handle, statement: sql, token: token)
            return PreparedStatement(name: name, sql: sql, connection: self)
        }
    }

    /// Runs a statement prepared on this connection with new values.
    @discardableResult
    public func execute(_ statement: PreparedStatement, bindings: PostgresBindings = PostgresBindings(),
                        options: QueryOptions = .default) async throws -> QueryResult {
        guard statement.connection === self else {
            throw PostgresError(.misuse, message: "the statement was prepared on another connection", statement: statement.sql)
        }
        return try await withCancellation(timeout: options.timeout) { token in
            let handle = try readyHandle()
            let started = try begin(token, statement: statement.sql, parameters: bindings.count)
            defer { end(token, statement: statement.sql, since: started) }
            noteSending(statement.sql, bindings)
            let sent = bindings.withUnsafeParameters { count, _, values, lengths, formats in
                PQsendQueryPrepared(handle, statement.name, count, values, lengths, formats, options.resultFormat.rawValue)
            }
            guard sent == 1 else { throw sendError(handle, statement: statement.sql) }
            return try collectResult(handle, statement: statement.sql, token: token)
        }
    }

    /// Sends a cancel request for whatever statement this connection runs now.
    public nonisolated func cancelCurrentQuery() {
        cancelHandle.cancelCurrentStatement()
    }

    /// Runs `body` on this connection's thread with a token that Task cancellation and the
    /// timeout cancel.
    func withCancellation<R>(timeout: Duration?, _ body: (CancelToken) throws -> R) async throws -> R {
        let token = CancelToken(handle: cancelHandle)
        return try await withTaskCancellationHandler {
            // Through `self`: a closure here is isolated to the connection only if it captures
            // `self`, and the blocking work must run on the connection's thread.
            try self.runCancellable(token: token, timeout: timeout, body)
        } onCancel: {
            token.cancel(.task)
        }
    }

    private func runCancellable<R>(token: CancelToken, timeout: Duration?, _ body: (CancelToken) throws -> R) throws -> R {
        // A library timer: it fires however many threads of Dispatch or of the cooperative
        // pool callers block.
        let timer = timeout.map { timeout in LibraryExecutor.shared.schedule(after: timeout) { token.cancel(.timeout) } }
        defer { timer?.cancel() }
        if Task.isCancelled { token.cancel(.task) }
        return try body(token)
    }
}

/// Quotes a string literal for SQL (`'it''s'`) where no bind parameter can go (DDL, `SET
/// TRANSACTION SNAPSHOT`); only for text from a model or the server, never for request values.
package func quoteLiteral(_ string: String) -> String {
    "'" + string.replacingOccurrences(of: "'", with: "''") + "'"
}

/// Quotes an identifier for SQL (`"order"`, `"My ""odd"" name"`); use it for names that
/// come from a model or a configuration, never for values.
public func quoteIdentifier(_ name: String) -> String {
    guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
    var quoted = "\""
    for character in name {
        quoted.append(character)
        if character == "\"" { quoted.append("\"") }
    }
    return quoted + "\""
}
