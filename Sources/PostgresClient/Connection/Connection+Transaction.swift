import CLibPQ

/// How a transaction runs.
public struct TransactionOptions: Sendable, Hashable {
    public enum IsolationLevel: String, Sendable, Hashable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    /// The isolation level; nil keeps the server's default (`default_transaction_isolation`).
    public var isolation: IsolationLevel?
    public var readOnly: Bool
    /// With `serializable` and `readOnly`: wait for a safe snapshot, then never fail with 40001.
    public var deferrable: Bool

    public init(isolation: IsolationLevel? = nil, readOnly: Bool = false, deferrable: Bool = false) {
        self.isolation = isolation
        self.readOnly = readOnly
        self.deferrable = deferrable
    }

    /// The `BEGIN` statement for these options.
    package var beginStatement: String {
        var sql = "BEGIN"
        if let isolation { sql += " ISOLATION LEVEL \(isolation.rawValue)" }
        if readOnly { sql += " READ ONLY" }
        if deferrable { sql += " DEFERRABLE" }
        return sql
    }
}

extension Connection {
    /// Where a transaction body started: a real transaction, or a savepoint inside one.
    enum TransactionMarker: Sendable {
        case transaction
        case savepoint(String)
    }

    /// Runs `body` in a transaction: `BEGIN` … `COMMIT`, or `ROLLBACK` when it throws.
    ///
    /// Called inside another transaction, it runs in a savepoint instead, so the inner
    /// body can fail and roll back alone. Options apply to the outermost call only.
    ///
    /// ```swift
    /// try await connection.withTransaction(.init(isolation: .serializable)) { connection in
    ///     try await connection.query("UPDATE accounts SET balance = balance - $1 WHERE id = $2", 10, from)
    ///     try await connection.query("UPDATE accounts SET balance = balance + $1 WHERE id = $2", 10, to)
    /// }
    /// ```
    @discardableResult
    nonisolated(nonsending)
    public func withTransaction<Result>(
        _ options: TransactionOptions = TransactionOptions(),
        _ body: (Connection) async throws -> Result
    ) async throws -> Result {
        let marker = try await beginTransaction(options)
        let result: Result
        do {
            result = try await body(self)
        } catch {
            await rollbackTransaction(marker)
            throw error
        }
        try await commitTransaction(marker)
        return result
    }

    func beginTransaction(_ options: TransactionOptions) async throws -> TransactionMarker {
        try await withCancellation(timeout: nil) { token in
            if let reading = readingAhead { receiveAhead(reading) }
            let handle = try liveHandle()
            switch PQtransactionStatus(handle) {
            case PQTRANS_IDLE:
                _ = try run(options.beginStatement, PostgresBindings(), format: .binary, token: token)
                return .transaction
            case PQTRANS_INTRANS:
                savepointCounter += 1
                let name = "pd_savepoint_\(savepointCounter)"
                _ = try run("SAVEPOINT \(name)", PostgresBindings(), format: .binary, token: token)
                return .savepoint(name)
            default:
                throw PostgresError(
                    .misuse, message: "cannot begin a transaction: the current transaction has failed",
                    sqlState: .inFailedTransaction, hint: "Roll back the failed transaction first.")
            }
        }
    }

    func commitTransaction(_ marker: TransactionMarker) async throws {
        do {
            try await withCancellation(timeout: nil) { token in
                switch marker {
                case .transaction:
                    let result = try run("COMMIT", PostgresBindings(), format: .binary, token: token)
                    if result.commandTag == "ROLLBACK" {
                        throw PostgresError(
                            .server, message: "the transaction was rolled back because a statement in it failed",
                            sqlState: .inFailedTransaction)
                    }
                case .savepoint(let name):
                    _ = try run("RELEASE SAVEPOINT \(name)", PostgresBindings(), format: .binary, token: token)
                }
            }
        } catch let error as PostgresError where error.kind == .connectionLost {
            guard case .transaction = marker else { throw error }
            throw error.commitOutcomeUnknown()
        } catch {
            // A commit that fails (deferred constraint, serialization failure) leaves no transaction open.
            await rollbackTransaction(marker)
            throw error
        }
    }

    /// Rolls back, even when the task is cancelled; a lost connection has nothing to roll back.
    func rollbackTransaction(_ marker: TransactionMarker) async {
        rollbackIgnoringCancellation(marker)
    }

    private func rollbackIgnoringCancellation(_ marker: TransactionMarker) {
        interruptActiveStream()
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return }
        let status = PQtransactionStatus(handle)
        guard status == PQTRANS_INTRANS || status == PQTRANS_INERROR else { return }
        switch marker {
        case .transaction:
            _ = try? run("ROLLBACK", PostgresBindings(), format: .binary, token: nil)
        case .savepoint(let name):
            _ = try? run("ROLLBACK TO SAVEPOINT \(name)", PostgresBindings(), format: .binary, token: nil)
            _ = try? run("RELEASE SAVEPOINT \(name)", PostgresBindings(), format: .binary, token: nil)
        }
    }

    /// Marks the connection's session to be discarded when it goes back to its pool.
    nonisolated func markSessionForReset() {
        health.withLock { $0.sessionNeedsReset = true }
    }

    /// ``resetForReuse()``, then `DISCARD ALL`: settings, `LISTEN`s, temporary tables,
    /// prepared statements and advisory locks of the session are gone. Returns false when the
    /// connection cannot be reused.
    func discardSession() async -> Bool {
        guard await resetForReuse() else { return false }
        do {
            _ = try runSimple("DISCARD ALL", token: nil)
        } catch {
            markBroken()
            return false
        }
        health.withLock { $0.sessionNeedsReset = false }
        refreshHealth()
        return true
    }

    /// Brings the connection back to idle for its next user: ends a stream, rolls back an
    /// open transaction. Returns false when the connection cannot be reused.
    public func resetForReuse() async -> Bool {
        interruptActiveStream()
        runPendingCleanups()
        if let reading = readingAhead {
            receiveAhead(reading)
            reading.ahead = nil
        }
        guard let handle, PQconsumeInput(handle) == 1, PQstatus(handle) == CONNECTION_OK else {
            markBroken()
            refreshHealth()
            return false
        }
        if PQtransactionStatus(handle) != PQTRANS_IDLE {
            _ = try? run("ROLLBACK", PostgresBindings(), format: .binary, token: nil)
        }
        refreshHealth()
        return PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE
    }
}

extension PostgresError {
    /// This lost connection as ``Kind/commitOutcomeUnknown``: it broke after `COMMIT` was
    /// sent, so the server may have committed before it did — only the server knows.
    package func commitOutcomeUnknown() -> PostgresError {
        var error = self
        error.kind = .commitOutcomeUnknown
        error.message = "the connection was lost while COMMIT ran; the transaction may or may not have committed (\(message))"
        error.hint = "Check whether the changes are in the database before writing them again, or make the unit of work idempotent (a unique key of the request, an upsert)."
        return error
    }
}
