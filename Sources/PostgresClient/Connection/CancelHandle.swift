import CLibPQ
import Foundation

/// Sends cancel requests (`PQcancel`) for the statement a connection is running, from any
/// thread, and makes sure a cancel meant for one statement never reaches the next.
///
/// A cancel request travels on a separate connection and the server applies it to
/// whatever the backend is doing when it arrives. So the connection does not start its
/// next statement until every cancel request already sent has been delivered
/// (``beginStatement(_:)`` waits for them); a request that arrives while the backend is
/// idle is ignored by the server. That includes a request that overtakes its statement (a
/// timeout that fires while a loaded server has not read the statement yet): while the
/// statement runs, its request is sent again, after 0.1 s, then less and less often.
public final class CancelHandle: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var cancelObject: OpaquePointer?
    private var current: CancelToken?
    private var requestsInFlight = 0

    init() {}

    /// Statement timers and socket watchers. A private serial queue gets a thread of its own;
    /// the global queues share theirs with Swift's cooperative pool, where busy tasks must
    /// not delay a timeout.
    static let queue = DispatchQueue(label: "PostgresClient.timers", qos: .userInitiated)

    deinit {
        if let cancelObject { PQfreeCancel(cancelObject) }
    }

    func install(_ connection: OpaquePointer) {
        let object = PQgetCancel(connection)
        condition.lock()
        while requestsInFlight > 0 { condition.wait() }
        if let old = cancelObject { PQfreeCancel(old) }
        cancelObject = object
        condition.unlock()
    }

    /// Cancels the statement running now, if any. Returns at once; the statement then
    /// fails with ``PostgresError/Kind/canceled`` (SQLSTATE 57014).
    public func cancelCurrentStatement() {
        condition.lock()
        let token = current
        condition.unlock()
        token?.cancel(.explicit)
    }

    /// Marks `token`'s statement as running; waits until earlier cancel requests are delivered.
    func beginStatement(_ token: CancelToken) throws {
        condition.lock()
        defer { condition.unlock() }
        while requestsInFlight > 0 { condition.wait() }
        if let reason = token.reasonLocked {
            throw PostgresError(reason == .timeout ? .timedOut : .canceled,
                                message: "the statement was canceled before it was sent", sqlState: .queryCanceled)
        }
        current = token
    }

    /// Marks `token`'s statement, already running on the server (a stream's next batch), as
    /// the one to cancel. A token canceled while nothing waited on the statement sends its
    /// request now: the statement then fails with SQLSTATE 57014, as when the cancel comes
    /// during the wait.
    func resumeStatement(_ token: CancelToken) {
        condition.lock()
        while requestsInFlight > 0 { condition.wait() }
        current = token
        let canceled = token.reasonLocked != nil
        condition.unlock()
        if canceled { requestCancel(for: token) }
    }

    func endStatement() {
        condition.lock()
        current = nil
        condition.broadcast()
        condition.unlock()
    }

    /// Called by a token (under the lock's protection) when it is canceled.
    fileprivate func requestCancel(for token: CancelToken) {
        condition.lock()
        guard current === token, let object = cancelObject else {
            condition.unlock()
            return
        }
        requestsInFlight += 1
        condition.unlock()
        let target = CancelObject(pointer: object)
        // PQcancel opens a connection and waits for the server: it gets a thread of its own,
        // so that neither the caller nor a busy thread pool can delay it.
        Thread.detachNewThread {
            var message = [CChar](repeating: 0, count: 256)
            var pause = Self.firstResendPause
            while true {
                // `object` stays valid: `install` waits for requests in flight before replacing it.
                _ = PQcancel(target.pointer, &message, Int32(message.count))
                self.condition.lock()
                // A request that reached the backend before it read the statement was ignored:
                // while the statement runs, it is sent again, less and less often.
                let resendAt = Date(timeIntervalSinceNow: pause)
                while self.current === token, self.condition.wait(until: resendAt) {}
                guard self.current === token else {
                    self.requestsInFlight -= 1
                    self.condition.broadcast()
                    self.condition.unlock()
                    return
                }
                self.condition.unlock()
                pause = min(pause * 2, Self.longestResendPause)
            }
        }
    }

    /// How long a canceled statement may still run before its cancel request is sent again
    /// (then twice as long each time, up to ``longestResendPause``), in seconds.
    static let firstResendPause: TimeInterval = 0.1
    static let longestResendPause: TimeInterval = 1

    fileprivate func withLock<R>(_ body: () -> R) -> R {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }
}

/// The cancellation state of one statement: canceled by Task cancellation, a timeout, or an
/// explicit ``CancelHandle/cancelCurrentStatement()``.
final class CancelToken: @unchecked Sendable {
    enum Reason: Sendable { case task, timeout, explicit }

    private let handle: CancelHandle
    // Guarded by the handle's lock.
    private var reason: Reason?

    init(handle: CancelHandle) { self.handle = handle }

    var reasonLocked: Reason? { reason }

    var cancellationReason: Reason? { handle.withLock { reason } }

    func cancel(_ reason: Reason) {
        let first = handle.withLock { () -> Bool in
            guard self.reason == nil else { return false }
            self.reason = reason
            return true
        }
        if first { handle.requestCancel(for: self) }
    }
}

/// A `PGcancel` pointer handed to the thread that sends the request; libpq allows
/// `PQcancel` from any thread.
private struct CancelObject: @unchecked Sendable {
    let pointer: OpaquePointer
}
