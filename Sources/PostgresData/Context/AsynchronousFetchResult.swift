import Foundation
import PostgresClient

/// A running (then finished) ``AsynchronousFetchRequest``: its progress, its result or
/// error, and the way to cancel it.
///
/// Core Data equivalent: `NSAsynchronousFetchResult`. ``finalResult`` stays nil until the
/// fetch ends successfully, and is never a partial result: a cancelled or failed fetch ends
/// with ``operationError`` instead. Read ``finalResult`` on the context's queue (in the
/// completion block, or in a `perform` block after ``wait()``).
public final class AsynchronousFetchResult<Result>: @unchecked Sendable {
    private struct State {
        var finalResult: [Result]?
        var error: (any Error)?
        var isFinished = false
        var estimatedResultCount: Int?
        var last: FetchProgressUpdate
        var subscribers: [Int: AsyncStream<FetchProgressUpdate>.Continuation] = [:]
        var nextSubscriber = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var task: Task<Void, Never>?
        var isCancelRequested = false
    }

    /// The request being run.
    public let fetchRequest: FetchRequest<Result>
    /// Counts rows: indeterminate (total -1) unless the request estimated its total, then
    /// advanced by each batch's row count. Cancelling it cancels the fetch.
    public let progress: Progress
    /// The context the results are registered in.
    public private(set) weak var managedObjectContext: ManagedObjectContext?

    private let state: Locked<State>
    private let started = ContinuousClock.now

    init(fetchRequest: FetchRequest<Result>, context: ManagedObjectContext) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = context
        self.state = Locked(State(last: FetchProgressUpdate(rowCount: 0, batchCount: 0, estimatedResultCount: nil,
                                                             elapsed: .zero, isFinished: false)))
        progress = Progress(totalUnitCount: -1)
        progress.isCancellable = true
        progress.cancellationHandler = { [weak self] in self?.cancel() }
    }

    /// The results, in the request's order, once the fetch ended successfully; nil before,
    /// and after a failure or cancellation.
    public var finalResult: [Result]? { state.withLock { $0.finalResult } }

    /// Why the fetch failed: a ``PostgresDataError`` (a cancellation carries SQLSTATE 57014).
    public var operationError: (any Error)? { state.withLock { $0.error } }

    /// The expected total, when the request asked for an estimate or count.
    public var estimatedResultCount: Int? { state.withLock { $0.estimatedResultCount } }

    /// True once the fetch ended, however it ended.
    public var isFinished: Bool { state.withLock { $0.isFinished } }

    /// Cancels the fetch: `PQcancel` reaches the statement running on the server at once,
    /// the transaction is rolled back and the fetch ends with a cancellation error. Does
    /// nothing once the fetch has ended.
    ///
    /// Core Data equivalent: `cancel()`.
    public func cancel() {
        let task = state.withLock { state -> Task<Void, Never>? in
            guard !state.isFinished else { return nil }
            state.isCancelRequested = true
            return state.task
        }
        task?.cancel()
    }

    /// Waits until the fetch ends; throws its ``operationError``. Cancelling the waiting task
    /// cancels the fetch.
    public func wait() async throws {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state -> Bool in
                    if state.isFinished { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            cancel()
        }
        if let error = operationError { throw error }
    }

    /// Progress as an `AsyncSequence`: one update per batch, the last one with `isFinished`.
    /// A sequence made after the fetch ended yields its last update only.
    public func progressUpdates() -> AsyncStream<FetchProgressUpdate> {
        let (stream, continuation) = AsyncStream<FetchProgressUpdate>.makeStream(bufferingPolicy: .unbounded)
        let last = state.withLock { state -> FetchProgressUpdate? in
            guard !state.isFinished else { return state.last }
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = continuation
            return nil
        }
        if let last {
            continuation.yield(last)
            continuation.finish()
        }
        return stream
    }

    // MARK: Driven by the fetch, on the context's queue

    func attach(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            state.task = task
            return state.isCancelRequested
        }
        if cancelNow { task.cancel() }
    }

    /// True once ``cancel()`` was called: batches still arriving are not registered.
    var isCancelRequested: Bool { state.withLock { $0.isCancelRequested } }

    func setEstimate(_ count: Int) {
        state.withLock { state in
            state.estimatedResultCount = count
            state.last.estimatedResultCount = count
        }
        progress.totalUnitCount = Int64(count)
    }

    /// Counts a delivered batch; returns the update to report.
    func advance(by rows: Int) -> FetchProgressUpdate {
        let update = state.withLock { state -> FetchProgressUpdate in
            state.last.rowCount += rows
            state.last.batchCount += 1
            state.last.elapsed = ContinuousClock.now - started
            for continuation in state.subscribers.values { continuation.yield(state.last) }
            return state.last
        }
        if progress.totalUnitCount >= 0 && Int64(update.rowCount) > progress.totalUnitCount {
            progress.totalUnitCount = Int64(update.rowCount)
        }
        progress.completedUnitCount = Int64(update.rowCount)
        return update
    }

    /// Ends the fetch with its results or error; `then` (the request's handlers) runs with the
    /// last update before waiters and progress sequences hear of the end.
    func finish(_ outcome: Swift.Result<[Result], any Error>, then: (FetchProgressUpdate) -> Void) {
        let (update, subscribers, waiters) = state.withLock { state in
            switch outcome {
            case .success(let results): state.finalResult = results
            case .failure(let error): state.error = error
            }
            state.isFinished = true
            state.task = nil
            state.last.elapsed = ContinuousClock.now - started
            state.last.isFinished = true
            defer {
                state.subscribers = [:]
                state.waiters = []
            }
            return (state.last, Array(state.subscribers.values), state.waiters)
        }
        if case .success = outcome {
            progress.totalUnitCount = Int64(update.rowCount)
            progress.completedUnitCount = Int64(update.rowCount)
        }
        then(update)
        for continuation in subscribers {
            continuation.yield(update)
            continuation.finish()
        }
        for waiter in waiters { waiter.resume() }
    }
}
