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
public actor ConnectionPool {
    public nonisolated let configuration: Configuration
    public nonisolated let minimumConnections: Int
    public nonisolated let maximumConnections: Int
    public nonisolated let leaseTimeout: Duration
    nonisolated let logger: Logger

    private var idle: [Connection] = []
    private var waiters = Deque<Waiter>()
    private var openCount = 0
    private var leasedCount = 0
    private var isShutDown = false
    private var drainWaiters: [CheckedContinuation<Void, Never>] = []
    private var closing: [Task<Void, Never>] = []
    private var nextWaiterID = 0

    private struct Waiter {
        let id: Int
        let continuation: CheckedContinuation<Connection, Error>
    }

    /// Creates a pool; connections open on demand, and `minimumConnections` are opened in the background.
    public init(configuration: Configuration, minimumConnections: Int = 0, maximumConnections: Int = 8,
                leaseTimeout: Duration = .seconds(30), logger: Logger = Logger(label: "PostgresClient.pool")) {
        precondition(maximumConnections >= 1, "a pool needs at least one connection")
        self.configuration = configuration
        self.minimumConnections = min(max(0, minimumConnections), maximumConnections)
        self.maximumConnections = maximumConnections
        self.leaseTimeout = leaseTimeout
        self.logger = logger
        if minimumConnections > 0 {
            Task { await self.fillToMinimum() }
        }
    }

    /// Numbers for monitoring.
    public struct Statistics: Sendable, Hashable {
        public var open: Int
        public var idle: Int
        public var leased: Int
        public var waiting: Int
    }

    public var statistics: Statistics {
        Statistics(open: openCount, idle: idle.count, leased: leasedCount, waiting: waiters.count)
    }

    /// Leases a connection for the duration of `body` and returns it afterwards, whatever happens.
    @discardableResult
    nonisolated(nonsending)
    public func withConnection<Result>(_ body: (Connection) async throws -> Result) async throws -> Result {
        let connection = try await lease()
        do {
            let result = try await body(connection)
            await release(connection)
            return result
        } catch {
            await release(connection)
            throw error
        }
    }

    /// Leases a connection; give it back with ``release(_:)``. Prefer ``withConnection(_:)``.
    public func lease() async throws -> Connection {
        guard !isShutDown else { throw Self.closedError() }
        while let connection = idle.popLast() {
            if await isHealthy(connection) {
                leasedCount += 1
                return connection
            }
            discard(connection)
            guard !isShutDown else { throw Self.closedError() }
        }
        if openCount < maximumConnections && waiters.isEmpty {
            openCount += 1
            do {
                let connection = try await Connection.connect(configuration, logger: logger)
                leasedCount += 1
                return connection
            } catch {
                openCount -= 1
                serveWaitersAfterCapacityFreed()
                throw error
            }
        }
        return try await waitForConnection()
    }

    /// Returns a leased connection. It is rolled back if it is inside a transaction and
    /// closed if it broke; either way the pool stays usable.
    public func release(_ connection: Connection) async {
        leasedCount -= 1
        var reusable = !connection.isClosed
        if reusable && connection.health.withLock({ $0.needsReset }) {
            reusable = await connection.resetForReuse()
        }
        if !reusable || isShutDown {
            discard(connection)
        } else if !waiters.isEmpty {
            let waiter = waiters.removeFirst()
            leasedCount += 1
            waiter.continuation.resume(returning: connection)
        } else {
            idle.append(connection)
        }
        if leasedCount == 0 && isShutDown { finishShutdown() }
    }

    /// Refuses new leases, fails the waiting ones, waits for leased connections to come
    /// back, and closes every connection.
    public func shutdown() async {
        isShutDown = true
        while let waiter = waiters.popFirst() {
            waiter.continuation.resume(throwing: Self.closedError())
        }
        if leasedCount > 0 {
            await withCheckedContinuation { drainWaiters.append($0) }
        }
        finishShutdown()
        let closing = self.closing
        self.closing.removeAll()
        for task in closing { await task.value }
    }

    private func finishShutdown() {
        for connection in idle { discard(connection) }
        idle.removeAll()
        let continuations = drainWaiters
        drainWaiters.removeAll()
        continuations.forEach { $0.resume() }
    }

    private func waitForConnection() async throws -> Connection {
        nextWaiterID += 1
        let id = nextWaiterID
        let timeout = leaseTimeout
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            await self?.expireWaiter(id)
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiters.append(Waiter(id: id, continuation: continuation))
                // Capacity freed by failed connection attempts serves the queue, not the next caller.
                serveWaitersAfterCapacityFreed()
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    private func expireWaiter(_ id: Int) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        let waiter = waiters.remove(at: index)
        waiter.continuation.resume(throwing: PostgresError(
            .poolTimeout,
            message: "no connection became free within \(leaseTimeout) (all \(maximumConnections) are leased)",
            hint: "Raise maximumConnections or leaseTimeout, or hold connections for shorter periods."))
    }

    private func cancelWaiter(_ id: Int) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        let waiter = waiters.remove(at: index)
        waiter.continuation.resume(throwing: CancellationError())
    }

    private func isHealthy(_ connection: Connection) async -> Bool {
        switch connection.idleSocketState() {
        case .quiet: return !connection.isClosed
        case .closedByServer: return false
        case .readable: return await connection.resetForReuse()
        }
    }

    private func discard(_ connection: Connection) {
        openCount -= 1
        let close = Task { await connection.close() }
        if isShutDown { closing.append(close) }
        serveWaitersAfterCapacityFreed()
    }

    /// Opens a connection for the first waiter when a slot has become free.
    private func serveWaitersAfterCapacityFreed() {
        guard !isShutDown, !waiters.isEmpty, openCount < maximumConnections else { return }
        openCount += 1
        Task {
            do {
                let connection = try await Connection.connect(configuration, logger: logger)
                handOff(connection)
            } catch {
                failFirstWaiter(error)
            }
        }
    }

    private func handOff(_ connection: Connection) {
        if let waiter = waiters.popFirst() {
            leasedCount += 1
            waiter.continuation.resume(returning: connection)
        } else {
            idle.append(connection)
        }
    }

    /// A connection opened for the first waiter failed: that waiter gets the error, and the
    /// next one its own attempt (while the server is down each waiter fails fast instead of
    /// waiting for a lease timeout with no connection open).
    private func failFirstWaiter(_ error: Error) {
        openCount -= 1
        waiters.popFirst()?.continuation.resume(throwing: error)
        serveWaitersAfterCapacityFreed()
    }

    private func fillToMinimum() async {
        while !isShutDown && openCount < minimumConnections {
            openCount += 1
            do {
                handOff(try await Connection.connect(configuration, logger: logger))
            } catch {
                openCount -= 1
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
