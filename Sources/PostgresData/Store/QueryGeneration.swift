import DequeModule
import PostgresClient

/// One snapshot of the database that pinned contexts read from: a `REPEATABLE READ READ
/// ONLY` transaction held open on a pooled connection, opened at the first read that needs
/// it (Core Data pins lazily too) and ended when the last token and context naming it go.
///
/// Reads of every context pinned to it run on that connection, one at a time (a FIFO
/// turn, never a blocked thread); work that needs a connection of its own for a long time
/// (an asynchronous fetch's cursor) imports the snapshot into its own transaction
/// (`SET TRANSACTION SNAPSHOT`, with the ID `pg_export_snapshot()` gave).
final class QueryGeneration: Sendable {
    private enum Phase {
        case pending
        case open(Connection, snapshot: String)
        case ended(PostgresDataError)
    }

    private struct State {
        var phase = Phase.pending
        var busy = false
        var waiters: Deque<CheckedContinuation<Void, Never>> = []
    }

    private let state = Locked(State())
    private let pool: ConnectionPool
    /// The coordinator whose registry ends the generation when the store closes.
    private let registry: GenerationRegistry

    init(pool: ConnectionPool, registry: GenerationRegistry) {
        self.pool = pool
        self.registry = registry
        registry.add(self)
    }

    deinit {
        registry.remove(self)
        if case .open(let connection, _) = state.withLock({ $0.phase }) {
            let pool = pool
            Task(executorPreference: LibraryExecutor.shared) { await Self.close(connection, pool: pool) }
        }
    }

    /// The snapshot's ID once the generation is open (for tests and descriptions).
    var snapshotID: String? {
        if case .open(_, let snapshot) = state.withLock({ $0.phase }) { return snapshot }
        return nil
    }

    /// True once the generation belongs to `pool` (a token from another coordinator does not).
    func belongs(to pool: ConnectionPool) -> Bool { self.pool === pool }

    /// The error reads meet once the generation ended, nil while it can serve.
    var endError: PostgresDataError? {
        if case .ended(let error) = state.withLock({ $0.phase }) { return error }
        return nil
    }

    /// Runs `body` on the generation's connection, inside its snapshot, opening it first if
    /// this is its first read. A lost connection ends the generation: this read and every
    /// later one throw ``PostgresDataError/queryGenerationEnded(_:)``.
    func withConnection<T: Sendable>(_ body: (Connection) async throws -> T) async throws -> T {
        await takeTurn()
        defer { endTurn() }
        let connection = try await openedConnection()
        do {
            return try await body(connection)
        } catch let error as PostgresError where error.kind == .connectionLost || error.kind == .connectionClosed {
            let ended = PostgresDataError.queryGenerationEnded(
                "the connection holding the pinned snapshot was lost (\(error)); pin the context again with setQueryGenerationFrom(.current), or unpin it with setQueryGenerationFrom(nil)")
            state.withLock { $0.phase = .ended(ended) }
            await pool.release(connection)
            throw ended
        }
    }

    /// Runs `body` on a pooled connection of its own, in a read-only transaction that sees
    /// this generation's snapshot; `body` may hold it as long as it needs.
    func withImportedSnapshot<T: Sendable>(_ body: (Connection) async throws -> T) async throws -> T {
        let snapshot = try await withConnection { _ in self.snapshotID ?? "" }
        // The ID is the server's (`0000000A-0000001B-1`); `SET TRANSACTION SNAPSHOT` takes no
        // bind parameter, so it is checked before it enters the statement.
        guard !snapshot.isEmpty, snapshot.allSatisfy({ $0.isHexDigit || $0 == "-" }) else {
            throw PostgresDataError.queryGenerationEnded("the server gave an unexpected snapshot ID \"\(snapshot)\"")
        }
        return try await pool.withConnection(resettingSession: false) { connection in
            try await connection.withTransaction(TransactionOptions(isolation: .repeatableRead, readOnly: true)) { connection in
                try await connection.query("SET TRANSACTION SNAPSHOT \(quoteLiteral(snapshot))")
                return try await body(connection)
            }
        }
    }

    /// Ends the generation now (the store is closing): its transaction is rolled back and
    /// its connection returned; later reads throw `error`.
    func end(_ error: PostgresDataError) async {
        await takeTurn()
        let phase = state.withLock { state -> Phase in
            defer { state.phase = .ended(error) }
            return state.phase
        }
        endTurn()
        if case .open(let connection, _) = phase { await Self.close(connection, pool: pool) }
    }

    private func openedConnection() async throws -> Connection {
        switch state.withLock({ $0.phase }) {
        case .open(let connection, _): return connection
        case .ended(let error): throw error
        case .pending: break
        }
        let connection = try await pool.lease(resettingSession: false)
        do {
            try await connection.query(TransactionOptions(isolation: .repeatableRead, readOnly: true).beginStatement)
            let snapshot = try await connection.query("SELECT pg_export_snapshot()")[0].decode(String.self, at: 0)
            state.withLock { $0.phase = .open(connection, snapshot: snapshot) }
            return connection
        } catch let error as PostgresError where error.sqlState?.rawValue == "08P01" {
            // A protocol violation at BEGIN: a pooler that allows no transactions.
            await pool.release(connection)
            throw PostgresDataError.invalidRequest(
                "a pinned context holds a REPEATABLE READ transaction open, which the connection refused (\(error.message)); behind PgBouncer, use transaction or session pooling for this store")
        } catch {
            await pool.release(connection)
            throw error
        }
    }

    private static func close(_ connection: Connection, pool: ConnectionPool) async {
        _ = try? await connection.query("ROLLBACK")
        await pool.release(connection)
    }

    private func takeTurn() async {
        let waits = state.withLock { state -> Bool in
            guard state.busy else {
                state.busy = true
                return false
            }
            return true
        }
        guard waits else { return }
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func endTurn() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let next = state.waiters.popFirst() else {
                state.busy = false
                return nil
            }
            return next
        }
        next?.resume()
    }
}

/// The coordinator's live generations, which its ``PersistentStoreCoordinator/close()``
/// ends before the pool can drain (each holds a leased connection).
final class GenerationRegistry: Sendable {
    private struct Entry {
        weak var generation: QueryGeneration?
    }

    private let entries = Locked<[ObjectIdentifier: Entry]>([:])

    func add(_ generation: QueryGeneration) {
        entries.withLock { $0[ObjectIdentifier(generation)] = Entry(generation: generation) }
    }

    func remove(_ generation: QueryGeneration) {
        entries.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(generation)) }
    }

    /// The generations alive now.
    var live: [QueryGeneration] { entries.withLock { $0.values.compactMap(\.generation) } }
}
