import CLibPQ

/// The rows of a large result as an `AsyncSequence` of batches (each a ``QueryResult``).
///
/// ```swift
/// for try await batch in connection.stream("SELECT id, name FROM items", mode: .cursor(batchSize: 10_000)) {
///     for row in batch { let (id, name) = try row.decode((Int64, String).self) }
/// }
/// ```
///
/// Back-pressure is built in: the next batch is fetched only when the loop asks for it, or,
/// for a cursor stream reading ahead, as soon as the loop has taken the previous one (the
/// server reads it while the loop works; memory holds two batches). Task cancellation
/// cancels the fetch in flight on the server.
///
/// A stream that opened its own transaction (a cursor outside a transaction) or runs in
/// single-row mode owns its connection until it is read to the end: the next statement run
/// on that connection first closes the cursor and transaction (or cancels the statement),
/// and the stream, if read again, throws. So leaving the loop early never leaves a cursor or
/// a statement behind. To interleave other statements with a cursor, open a transaction
/// around both (``Connection/withTransaction(_:_:)``); the cursor then lives until it ends.
public struct RowStream: AsyncSequence, Sendable {
    public typealias Element = QueryResult

    let connection: Connection
    let sql: String
    let bindings: PostgresBindings
    let mode: StreamMode
    let readsAhead: Bool

    public func makeAsyncIterator() -> Iterator {
        Iterator(owner: StreamOwner(connection: connection,
                                    state: StreamState(sql: sql, bindings: bindings, mode: mode, readsAhead: readsAhead)))
    }

    public struct Iterator: AsyncIteratorProtocol {
        let owner: StreamOwner

        public mutating func next() async throws -> QueryResult? {
            try await owner.connection.nextBatch(owner.state)
        }
    }
}

/// Hands an abandoned stream back to its connection for cleanup.
final class StreamOwner: Sendable {
    let connection: Connection
    let state: StreamState

    init(connection: Connection, state: StreamState) {
        self.connection = connection
        self.state = state
    }

    deinit {
        connection.scheduleCleanup(state)
    }
}

/// Where a stream is; read and written on its connection's thread only.
final class StreamState: @unchecked Sendable {
    let sql: String
    let bindings: PostgresBindings
    let mode: StreamMode
    var started = false
    var finished = false
    var cursor: CursorStatements?
    var ownsTransaction = false
    /// Set when another statement ended the stream before it was read to its end.
    var interrupted = false
    var columns: ColumnSet?
    /// Whether a cursor stream sends its next `FETCH` as soon as it hands a batch over.
    let readsAhead: Bool
    /// The batch asked for ahead: on its way, or read while another statement needed the
    /// connection.
    var ahead: Ahead?

    enum Ahead {
        case inFlight(String)
        case received(Result<QueryResult, any Error>)
    }

    init(sql: String, bindings: PostgresBindings, mode: StreamMode, readsAhead: Bool = false) {
        self.sql = sql
        self.bindings = bindings
        self.mode = mode
        self.readsAhead = readsAhead
    }
}

extension Connection {
    /// Streams the rows of `sql` in batches; see ``RowStream``.
    ///
    /// With `readingAhead`, a cursor stream sends the `FETCH` of the next batch as soon as it
    /// hands one over, so that the server reads it while the loop works on this one (memory
    /// then holds two batches, and one `FETCH` more than the loop asks for may run when it
    /// stops early). Single-row streams read as the rows arrive and ignore it.
    public nonisolated func stream<each Value: PostgresEncodable>(
        _ sql: String, _ values: repeat each Value, mode: StreamMode = .cursor(batchSize: 10_000), readingAhead: Bool = false
    ) throws -> RowStream {
        RowStream(connection: self, sql: sql, bindings: try PostgresBindings(repeat each values), mode: mode, readsAhead: readingAhead)
    }

    /// Streams the rows of `sql` with prepared bindings; see ``RowStream`` and
    /// ``stream(_:_:mode:readingAhead:)``.
    public nonisolated func stream(_ sql: String, bindings: PostgresBindings, mode: StreamMode = .cursor(batchSize: 10_000),
                                   readingAhead: Bool = false) -> RowStream {
        RowStream(connection: self, sql: sql, bindings: bindings, mode: mode, readsAhead: readingAhead)
    }

    func nextBatch(_ state: StreamState) async throws -> QueryResult? {
        if state.interrupted {
            throw PostgresError(
                .misuse, message: "the stream was ended because another statement ran on its connection",
                hint: "Read a stream to its end before using its connection again, or open a transaction around both.",
                statement: state.sql)
        }
        if state.finished { return nil }
        return try await withCancellation(timeout: nil) { token in
            switch state.mode {
            case .cursor(let size): try nextCursorBatch(state, size: max(1, size), token: token)
            case .singleRow(let size): try nextSingleRowBatch(state, size: max(1, size), token: token)
            }
        }
    }

    private func nextCursorBatch(_ state: StreamState, size: Int, token: CancelToken) throws -> QueryResult? {
        if !state.started {
            state.started = true
            let handle = try readyHandle(for: state)
            switch PQtransactionStatus(handle) {
            case PQTRANS_IDLE:
                _ = try run("BEGIN READ ONLY", PostgresBindings(), format: .binary, token: token, for: state)
                state.ownsTransaction = true
                activeStream = state
            case PQTRANS_INERROR:
                state.finished = true
                throw PostgresError(.misuse, message: "cannot open a cursor: the current transaction has failed",
                                    sqlState: .inFailedTransaction, statement: state.sql)
            default:
                break
            }
            cursorCounter += 1
            let cursor = CursorStatements(number: cursorCounter, batchSize: size)
            do {
                _ = try run(cursor.declare(state.sql), state.bindings, format: .binary, token: token, for: state)
            } catch {
                endCursor(state)
                throw error
            }
            state.cursor = cursor
        }
        guard let cursor = state.cursor else { return nil }
        let batch: QueryResult
        do {
            batch = try takeAhead(state, token: token) ?? run(cursor.fetch, PostgresBindings(), format: .binary, token: token, for: state)
        } catch {
            endCursor(state)
            throw error
        }
        if cursor.isLast(batch.count) {
            endCursor(state)
        } else if state.readsAhead {
            sendAhead(cursor.fetch, for: state)
        }
        return batch.isEmpty ? nil : batch
    }

    /// Sends the `FETCH` of a stream's next batch without waiting for it. Should sending fail,
    /// nothing is ahead: the next batch runs the `FETCH` itself and meets the error.
    private func sendAhead(_ fetch: String, for state: StreamState) {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return }
        logger.debug("statement", metadata: ["db.query.text": "\(fetch)", "db.query.parameter_count": "0"])
        guard PQsendQueryParams(handle, fetch, 0, nil, nil, nil, nil, PostgresFormat.binary.rawValue) == 1 else { return }
        state.ahead = .inFlight(fetch)
        readingAhead = state
        refreshHealth()
    }

    /// The batch a stream asked for ahead, waited for if still on its way (cancellable as
    /// any batch); nil when none was.
    private func takeAhead(_ state: StreamState, token: CancelToken) throws -> QueryResult? {
        guard let ahead = state.ahead else { return nil }
        state.ahead = nil
        switch ahead {
        case .received(let outcome):
            return try outcome.get()
        case .inFlight(let fetch):
            readingAhead = nil
            let handle = try liveHandle()
            resume(token)
            defer { end(token) }
            return try collectResult(handle, statement: fetch, token: token)
        }
    }

    /// Reads the batch `state` asked for ahead, keeping it (or its error) for the stream's next
    /// call: another statement needs the connection.
    func receiveAhead(_ state: StreamState) {
        readingAhead = nil
        guard case .inFlight(let fetch)? = state.ahead, let handle else { return }
        state.ahead = .received(Result { try collectResult(handle, statement: fetch, token: nil) })
    }

    /// Closes the cursor and the transaction the stream opened; errors leave nothing to clean.
    func endCursor(_ state: StreamState) {
        if readingAhead === state { receiveAhead(state) }
        state.ahead = nil
        state.finished = true
        if activeStream === state { activeStream = nil }
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return }
        let status = PQtransactionStatus(handle)
        if state.ownsTransaction {
            _ = try? runSimple(status == PQTRANS_INTRANS ? "COMMIT" : "ROLLBACK", token: nil, for: state)
        } else if let cursor = state.cursor, status == PQTRANS_INTRANS {
            _ = try? runSimple(cursor.close, token: nil, for: state)
        }
        state.cursor = nil
    }

    private func nextSingleRowBatch(_ state: StreamState, size: Int, token: CancelToken) throws -> QueryResult? {
        let handle = try readyHandle(for: state)
        if state.started { resume(token) } else { try cancelHandle.beginStatement(token) }
        defer { end(token) }
        if !state.started {
            state.started = true
            logger.debug("statement", metadata: ["db.query.text": "\(state.sql)", "db.query.parameter_count": "\(state.bindings.count)"])
            noteSending(state.sql, state.bindings)
            let sent = state.bindings.withUnsafeParameters { count, types, values, lengths, formats in
                PQsendQueryParams(handle, state.sql, count, types, values, lengths, formats, PostgresFormat.binary.rawValue)
            }
            guard sent == 1 else {
                state.finished = true
                throw sendError(handle, statement: state.sql)
            }
            PQsetSingleRowMode(handle)
            activeStream = state
        }
        var rows: [OpaquePointer] = []
        rows.reserveCapacity(size)
        var failure: PostgresError?
        while rows.count < size {
            guard let result = PQgetResult(handle) else {
                state.finished = true
                activeStream = nil
                break
            }
            switch PQresultStatus(result) {
            case PGRES_SINGLE_TUPLE:
                if state.columns == nil { state.columns = ColumnSet(result) }
                rows.append(result)
            case PGRES_FATAL_ERROR:
                if failure == nil { failure = makeError(result, statement: state.sql, token: token) }
                PQclear(result)
            default:
                PQclear(result)
            }
        }
        if let failure {
            rows.forEach { PQclear($0) }
            while let result = PQgetResult(handle) { PQclear(result) }
            state.finished = true
            activeStream = nil
            throw failure
        }
        guard !rows.isEmpty, let columns = state.columns else { return nil }
        return QueryResult(storage: ResultStorage(singleRows: rows, columns: columns, statement: state.sql))
    }

    /// Ends the stream that owns the connection's state, so that another statement can run.
    func interruptActiveStream() {
        guard let state = activeStream else { return }
        state.interrupted = !state.finished
        switch state.mode {
        case .cursor:
            endCursor(state)
        case .singleRow:
            activeStream = nil
            state.finished = true
            cancelAndDrain()
        }
        refreshHealth()
    }

    /// Cancels the statement in flight and reads what is left of it.
    private func cancelAndDrain() {
        guard let handle else { return }
        let token = CancelToken(handle: cancelHandle)
        guard (try? cancelHandle.beginStatement(token)) != nil else { return }
        token.cancel(.explicit)
        while let result = PQgetResult(handle) { PQclear(result) }
        cancelHandle.endStatement()
    }

    /// Called from any thread when a stream's iterator goes away.
    nonisolated func scheduleCleanup(_ state: StreamState) {
        pendingCleanups.withLock { $0.append(state) }
        Task { await self.runPendingCleanups() }
    }

    /// Closes what abandoned streams left open: their cursor and transaction, or their statement.
    func runPendingCleanups() {
        let states = pendingCleanups.withLock { states -> [StreamState] in
            defer { states.removeAll() }
            return states
        }
        for state in states where state.started && !state.finished {
            if activeStream === state {
                interruptActiveStream()
            } else if case .cursor = state.mode {
                endCursor(state)
            }
            state.finished = true
        }
    }

    /// The handle, ready for a new statement: abandoned streams cleaned up, and a stream that
    /// owns the connection's state ended unless the statement is its own.
    func readyHandle(for stream: StreamState? = nil) throws -> OpaquePointer {
        if pendingCleanups.withLock({ !$0.isEmpty }) { runPendingCleanups() }
        if let active = activeStream, active !== stream { interruptActiveStream() }
        if let reading = readingAhead { receiveAhead(reading) }
        return try liveHandle()
    }
}
