import DequeModule
import Foundation
import Logging

/// A bounded set of connections shared by many tasks.
///
/// ```swift
/// let pool = ConnectionPool(configuration: try Configuration(url: url), maximumConnections: 8)
/// let count = try await pool.withConnection { connection in
///     try await connection.query("SELECT count(*) FROM items").first!.decode(Int64.self, at: 0)
/// }
/// await pool.shutdown()
/// ```
///
/// - Leases are served in FIFO order and time out after ``leaseTimeout``.
/// - A connection is checked when it comes back: one returned inside a transaction is
///   rolled back, one that broke is closed and replaced on demand, so a terminated
///   backend costs at most the statement that was running on it.
/// - An idle connection whose socket shows unexpected data (the server's "terminating
///   connection" message, say) is checked before it is handed out.
/// - ``shutdown()`` refuses new leases and waits for the current ones to come back.
///
/// ## Threads
///
/// The pool is a lock, not an actor: taking an idle connection costs no thread hop. In
/// ``withConnection(_:)`` the body runs on the connection's own thread, and waiting for a
/// connection (and everything after it) runs on the library's own threads, so a task that
/// holds a connection never needs a thread of the cooperative pool or of Dispatch to give it
/// back: callers that block every such thread cannot deadlock the pool. Lease timeouts and
/// background connects run on the library's threads too.
public final class ConnectionPool: Sendable {
    public let configuration: Configuration
    public let minimumConnections: Int
    public let maximumConnections: Int
    public let leaseTimeout: Duration
    /// The pool's name in metrics (`db.client.connection.pool.name`) and logs.
    public let name: String
    let logger: Logger
    private let metrics: PoolMetrics

    private struct State {
        var idle: [Connection] = []
        var waiters = Deque<Waiter>()
        var openCount = 0
        var leasedCount = 0
        var isShutDown = false
        var drainWaiters: [CheckedContinuation<Void, Never>] = []
        var closing: [Task<Void, Never>] = []
        var nextWaiterID = 0
        var published = PoolMetrics.Published()
    }

    private struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<Connection, Error>
        let timer: LibraryTimer
    }

    private let state = Locked(State())

    /// Creates a pool; connections open on demand, and `minimumConnections` are opened in
    /// the background. A `maximumConnections` below 1 counts as 1.
    ///
    /// `name` tells this pool's metrics and log lines from other pools' (by default
    /// `host:port/database`, as OpenTelemetry suggests). The pool publishes its numbers
    /// through swift-metrics, to the factory current when it is created: connections by state
    /// (`db.client.connection.count`, `db.client.connection.state` = `idle` or `used`),
    /// `db.client.connection.pending_requests`, `db.client.connection.max`, and the timers
    /// `db.client.connection.wait_time`, `.use_time`, `.create_time`, and the counter
    /// `db.client.connection.timeouts`. Connections opened and closed are logged at `info`.
    public init(configuration: Configuration, minimumConnections: Int = 0, maximumConnections: Int = 8,
                leaseTimeout: Duration = .seconds(30), name: String? = nil,
                logger: Logger = Logger(label: "PostgresClient.pool")) {
        self.configuration = configuration
        self.maximumConnections = max(1, maximumConnections)
        self.minimumConnections = min(max(0, minimumConnections), self.maximumConnections)
        self.leaseTimeout = leaseTimeout
        let name = name ?? Self.defaultName(configuration)
        self.name = name
        var logger = logger
        logger[metadataKey: "db.client.connection.pool.name"] = "\(name)"
        self.logger = logger
        self.metrics = PoolMetrics(poolName: name, maximumConnections: self.maximumConnections)
        if self.minimumConnections > 0 {
            Task(executorPreference: LibraryExecutor.shared) { await self.fillToMinimum() }
        }
    }

    /// `host:port/database`, as OpenTelemetry names a pool by default.
    static func defaultName(_ configuration: Configuration) -> String {
        let host = configuration.host ?? "localhost"
        let port = configuration.port ?? 5432
        return "\(host):\(port)/\(configuration.database ?? configuration.user ?? "")"
    }

    /// Runs `body` on the pool's state under its lock, then publishes the counts that moved.
    private func withState<T>(_ body: (inout State) throws -> T) rethrows -> T {
        try state.withLock { state in
            defer {
                metrics.publish(idle: state.idle.count, used: state.leasedCount, pending: state.waiters.count, &state.published)
            }
            return try body(&state)
        }
    }

    /// Numbers for monitoring.
    public struct Statistics: Sendable, Hashable {
        /// Connections open or opening.
        public var open: Int
        /// Open connections waiting for a lease.
        public var idle: Int
        /// Connections leased now.
        public var leased: Int
        /// Leases waiting for a connection.
        public var waiting: Int
    }

    /// The pool's numbers now.
    public var statistics: Statistics {
        withState { Statistics(open: $0.openCount, idle: $0.idle.count, leased: $0.leasedCount, waiting: $0.waiters.count) }
    }

    /// Leases a connection for the duration of `body` and returns it afterwards, whatever happens.
    ///
    /// `body` runs on the connection's thread (unless it is isolated to an actor of its own);
    /// a wait for a free connection runs on the library's threads. Either way, from the lease
    /// to the release nothing needs a thread that callers could have blocked.
    ///
    /// What `body` leaves in the session — settings (`SET`), `LISTEN`s, temporary tables,
    /// prepared statements — is discarded (`DISCARD ALL`) when the connection comes back,
    /// so the next holder starts clean.
    @discardableResult
    nonisolated(nonsending)
    public func withConnection<Result>(_ body: (Connection) async throws -> Result) async throws -> Result {
        try await withConnection(resettingSession: true, body)
    }

    /// ``withConnection(_:)`` for the library's own statements, which leave nothing in the
    /// session: with `resettingSession` false, no `DISCARD ALL` follows.
    @discardableResult
    nonisolated(nonsending)
    package func withConnection<Result>(resettingSession: Bool, _ body: (Connection) async throws -> Result) async throws -> Result {
        if let connection = takeIdleConnection() {
            if resettingSession { connection.markSessionForReset() }
            metrics.waitTime.recordNanoseconds(0)
            return try await run(body, on: connection)
        }
        return try await withTaskExecutorPreference(LibraryExecutor.shared) {
            let connection = try await self.lease(resettingSession: resettingSession)
            return try await self.run(body, on: connection)
        }
    }

    nonisolated(nonsending)
    private func run<Result>(_ body: (Connection) async throws -> Result, on connection: Connection) async throws -> Result {
        try await withTaskExecutorPreference(connection.thread) {
            let leased = ContinuousClock.now
            do {
                let result = try await body(connection)
                self.metrics.useTime.record(leased.duration(to: .now))
                await self.release(connection)
                return result
            } catch {
                self.metrics.useTime.record(leased.duration(to: .now))
                await self.release(connection)
                throw error
            }
        }
    }

    /// Starts `body` at once on the thread of an idle connection, and gives the connection
    /// back when `body` ends; nil, and nothing runs, when no idle connection is ready
    /// without a check or has a thread that is neither lent nor the caller's.
    ///
    /// For the library's statements sent in the background from a thread that must not wait
    /// (a key reservation while a context inserts): the work crosses one thread, the
    /// connection's, where ``withConnection(_:)`` from a new task crosses three (into the
    /// library's executor, to the connection and back), each a wake-up that a busy core can
    /// delay by milliseconds.
    package func startOnIdleConnection(_ body: @escaping @Sendable (Connection) async -> Void) -> Task<Void, Never>? {
        let current = ConnectionThread.current
        guard let connection = takeIdleConnection(choosing: { idle in
            idle.lastIndex { $0.thread !== current && !$0.thread.isLent }
        }) else { return nil }
        metrics.waitTime.recordNanoseconds(0)
        return Task(executorPreference: connection.thread) {
            // Already on the connection's thread: `run` hops nowhere.
            _ = try? await self.run({ connection in await body(connection) }, on: connection)
        }
    }

    /// An idle connection that needs no check, taken without waiting; nil when there is
    /// none (the slow path then checks, opens or waits).
    private func takeIdleConnection() -> Connection? {
        // The connection whose thread the caller runs on (lent to a context's block), when
        // idle: its statement then runs without a thread hop. Otherwise the latest idle one
        // whose thread is not lent (a statement there would wait for the borrower's pause).
        let current = ConnectionThread.current
        return takeIdleConnection { idle in
            current.flatMap { thread in idle.lastIndex { $0.thread === thread } }
                ?? idle.lastIndex { !$0.thread.isLent } ?? idle.count - 1
        }
    }

    /// The idle connection at the index `choose` picks, taken if it needs no check.
    private func takeIdleConnection(choosing choose: ([Connection]) -> Int?) -> Connection? {
        withState { state -> Connection? in
            guard !state.isShutDown, !state.idle.isEmpty, let index = choose(state.idle) else { return nil }
            let connection = state.idle[index]
            guard connection.idleSocketState() == .quiet, !connection.isClosed else { return nil }
            state.idle.remove(at: index)
            state.leasedCount += 1
            return connection
        }
    }

    /// Leases a connection; give it back with ``release(_:)``. Prefer ``withConnection(_:)``,
    /// which also keeps the holder off threads that callers can exhaust. The session is
    /// discarded on release, as with ``withConnection(_:)``.
    public func lease() async throws -> Connection {
        try await lease(resettingSession: true)
    }

    /// ``lease()`` for the library's own statements: with `resettingSession` false, no
    /// `DISCARD ALL` on release.
    package func lease(resettingSession: Bool) async throws -> Connection {
        let asked = ContinuousClock.now
        let connection = try await leaseConnection()
        metrics.waitTime.record(asked.duration(to: .now))
        if resettingSession { connection.markSessionForReset() }
        return connection
    }

    private func leaseConnection() async throws -> Connection {
        while true {
            enum Step { case check(Connection), open, wait }
            let step = try withState { state throws -> Step in
                guard !state.isShutDown else { throw Self.closedError() }
                if let connection = state.idle.popLast() {
                    state.leasedCount += 1
                    return .check(connection)
                }
                if state.openCount < maximumConnections && state.waiters.isEmpty {
                    state.openCount += 1
                    return .open
                }
                return .wait
            }
            switch step {
            case .check(let connection):
                if await isHealthy(connection) { return connection }
                withState { $0.leasedCount -= 1 }
                discard(connection)
            case .open:
                do {
                    let connection = try await open()
                    withState { $0.leasedCount += 1 }
                    return connection
                } catch {
                    withState { $0.openCount -= 1 }
                    serveWaitersAfterCapacityFreed()
                    throw error
                }
            case .wait:
                return try await waitForConnection()
            }
        }
    }

    /// Returns a leased connection. It is rolled back if it is inside a transaction, and
    /// closed if it broke or sent a message larger than ``Connection/largeMessageBytes``
    /// (libpq would keep a buffer that size for good); either way the pool stays usable.
    public func release(_ connection: Connection) async {
        let (needsReset, sessionTouched, sentLargeMessage) = connection.health.withLock {
            ($0.needsReset, $0.sessionNeedsReset, $0.sentLargeMessage)
        }
        var reusable = !connection.isClosed && !sentLargeMessage
        if reusable && sessionTouched {
            reusable = await connection.discardSession()
        } else if reusable && needsReset {
            reusable = await connection.resetForReuse()
        }
        enum Next { case discard, handOff(CheckedContinuation<Connection, Error>, LibraryTimer), idle }
        let (next, drained) = withState { state -> (Next, [CheckedContinuation<Void, Never>]) in
            state.leasedCount -= 1
            var next = Next.idle
            if !reusable || state.isShutDown {
                next = .discard
            } else if let waiter = state.waiters.popFirst() {
                state.leasedCount += 1
                next = .handOff(waiter.continuation, waiter.timer)
            } else {
                state.idle.append(connection)
            }
            return (next, state.leasedCount == 0 && state.isShutDown ? finishShutdownLocked(&state) : [])
        }
        switch next {
        case .discard: discard(connection)
        case .handOff(let continuation, let timer):
            timer.cancel()
            continuation.resume(returning: connection)
        case .idle: break
        }
        drained.forEach { $0.resume() }
    }

    /// Refuses new leases, fails the waiting ones, waits for leased connections to come
    /// back, and closes every connection.
    public func shutdown() async {
        let (waiters, mustWait) = withState { state -> ([Waiter], Bool) in
            state.isShutDown = true
            // Not `Array(state.waiters)` when empty: copying an empty Deque writes a count of 0
            // into the shared empty-array storage, which the thread sanitizer reports as a race
            // with every reader of an empty array.
            let waiters = state.waiters.isEmpty ? [] : Array(state.waiters)
            state.waiters.removeAll()
            return (waiters, state.leasedCount > 0)
        }
        for waiter in waiters {
            waiter.timer.cancel()
            waiter.continuation.resume(throwing: Self.closedError())
        }
        if mustWait {
            await withCheckedContinuation { continuation in
                let ready = withState { state -> Bool in
                    guard state.leasedCount > 0 else { return true }
                    state.drainWaiters.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        }
        let (idle, closing, drained) = withState { state -> ([Connection], [Task<Void, Never>], [CheckedContinuation<Void, Never>]) in
            let idle = state.idle
            state.idle.removeAll()
            let drained = finishShutdownLocked(&state)
            let closing = state.closing
            state.closing.removeAll()
            return (idle, closing, drained)
        }
        drained.forEach { $0.resume() }
        for connection in idle { discard(connection) }
        for task in closing { await task.value }
        let late = withState { state -> [Task<Void, Never>] in
            defer { state.closing.removeAll() }
            return state.closing
        }
        for task in late { await task.value }
    }

    private func finishShutdownLocked(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let continuations = state.drainWaiters
        state.drainWaiters.removeAll()
        return continuations
    }

    private func waitForConnection() async throws -> Connection {
        let id = withState { state -> Int in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let timer = LibraryExecutor.shared.schedule(after: leaseTimeout) { [weak self] in self?.expireWaiter(id) }
                enum Queued { case refused, idle(Connection), waiting }
                let queued = withState { state -> Queued in
                    guard !state.isShutDown else { return .refused }
                    // A connection released since `lease()` chose to wait serves this waiter.
                    if state.waiters.isEmpty, let connection = state.idle.popLast() {
                        state.leasedCount += 1
                        return .idle(connection)
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation, timer: timer))
                    return .waiting
                }
                switch queued {
                case .refused:
                    timer.cancel()
                    continuation.resume(throwing: Self.closedError())
                    return
                case .idle(let connection):
                    timer.cancel()
                    continuation.resume(returning: connection)
                    return
                case .waiting: break
                }
                // Capacity freed by failed connection attempts serves the queue, not the next caller.
                serveWaitersAfterCapacityFreed()
            }
        } onCancel: {
            self.removeWaiter(id)?.resume(throwing: CancellationError())
        }
    }

    private func removeWaiter(_ id: Int) -> CheckedContinuation<Connection, Error>? {
        let waiter = withState { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.waiters.remove(at: index)
        }
        waiter?.timer.cancel()
        return waiter?.continuation
    }

    private func expireWaiter(_ id: Int) {
        guard let waiter = removeWaiter(id) else { return }
        metrics.timeouts.increment()
        logger.warning("a lease timed out waiting for a connection", metadata: [
            "timeout": "\(leaseTimeout)", "db.client.connection.max": "\(maximumConnections)"])
        waiter.resume(throwing: PostgresError(
            .poolTimeout,
            message: "no connection became free within \(leaseTimeout) (all \(maximumConnections) are leased)",
            hint: "Raise maximumConnections or leaseTimeout, or hold connections for shorter periods."))
    }

    private func isHealthy(_ connection: Connection) async -> Bool {
        switch connection.idleSocketState() {
        case .quiet: return !connection.isClosed
        case .closedByServer: return false
        case .readable: return await connection.resetForReuse()
        }
    }

    /// Opens a connection for the pool, timing and logging it.
    private func open() async throws -> Connection {
        let started = ContinuousClock.now
        let connection = try await Connection.connect(configuration, logger: logger)
        metrics.createTime.record(started.duration(to: .now))
        logger.info("opened a pooled connection", metadata: ["db.connection.pid": "\(connection.backendPID)"])
        return connection
    }

    private func reason(forDiscarding connection: Connection) -> String {
        if connection.isClosed { return "broken or closed" }
        if connection.holdsLargeBuffer { return "it sent a message of more than \(Connection.largeMessageBytes >> 20) MiB, and libpq keeps a buffer that size" }
        return "pool shut down or connection not reusable"
    }

    private func discard(_ connection: Connection) {
        logger.info("closing a pooled connection", metadata: [
            "db.connection.pid": "\(connection.backendPID)",
            "reason": "\(reason(forDiscarding: connection))"])
        let close = Task(executorPreference: LibraryExecutor.shared) { await connection.close() }
        withState { state in
            state.openCount -= 1
            if state.isShutDown { state.closing.append(close) }
        }
        serveWaitersAfterCapacityFreed()
    }

    /// Opens a connection for the first waiter when a slot has become free.
    private func serveWaitersAfterCapacityFreed() {
        let opens = withState { state -> Bool in
            guard !state.isShutDown, !state.waiters.isEmpty, state.openCount < maximumConnections else { return false }
            state.openCount += 1
            return true
        }
        guard opens else { return }
        Task(executorPreference: LibraryExecutor.shared) {
            do {
                let connection = try await self.open()
                self.handOff(connection)
            } catch {
                self.failFirstWaiter(error)
            }
        }
    }

    private func handOff(_ connection: Connection) {
        enum Next { case waiter(Waiter), discard, idle }
        let next = withState { state -> Next in
            if let waiter = state.waiters.popFirst() {
                state.leasedCount += 1
                return .waiter(waiter)
            }
            if state.isShutDown { return .discard }
            state.idle.append(connection)
            return .idle
        }
        switch next {
        case .waiter(let waiter):
            waiter.timer.cancel()
            waiter.continuation.resume(returning: connection)
        case .discard: discard(connection)
        case .idle: break
        }
    }

    /// A connection opened for the first waiter failed: that waiter gets the error, and the
    /// next one its own attempt (while the server is down each waiter fails fast instead of
    /// waiting for a lease timeout with no connection open).
    private func failFirstWaiter(_ error: Error) {
        let waiter = withState { state -> Waiter? in
            state.openCount -= 1
            return state.waiters.popFirst()
        }
        waiter?.timer.cancel()
        waiter?.continuation.resume(throwing: error)
        serveWaitersAfterCapacityFreed()
    }

    private func fillToMinimum() async {
        while true {
            let opens = withState { state -> Bool in
                guard !state.isShutDown && state.openCount < minimumConnections else { return false }
                state.openCount += 1
                return true
            }
            guard opens else { return }
            do {
                handOff(try await open())
            } catch {
                withState { $0.openCount -= 1 }
                logger.warning("could not open a pooled connection", metadata: ["error": "\(error)"])
                return
            }
        }
    }

    private static func closedError() -> PostgresError {
        PostgresError(.poolClosed, message: "the connection pool has been shut down")
    }
}

extension Connection {
    enum IdleSocketState { case quiet, readable, closedByServer }

    /// `POLLRDHUP`, which Glibc exposes only with `_GNU_SOURCE`: the peer closed its side.
    private static let pollReadHangUp: Int16 = 0x2000

    /// What arrived on an idle connection's socket since it was last used: nothing, a
    /// message (a notice, a notification), or the server hanging up (a terminated backend).
    /// Call only while nobody uses the connection.
    nonisolated func idleSocketState() -> IdleSocketState {
        let socket = health.withLock { $0.isClosed || $0.isBroken ? -1 : $0.socket }
        guard socket >= 0 else { return .closedByServer }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN) | Self.pollReadHangUp, revents: 0)
        guard poll(&descriptor, 1, 0) > 0 else { return .quiet }
        if descriptor.revents & (Self.pollReadHangUp | Int16(POLLHUP) | Int16(POLLERR)) != 0 { return .closedByServer }
        return .readable
    }
}
