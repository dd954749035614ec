import DequeModule
import PostgresClient

/// Batches handed from a producing task to a consuming one: the store side reads and
/// decodes batch k while the context registers batch k − 1. The consumer suspends while it
/// waits; it never blocks a thread.
///
/// The buffer is unbounded: a producer faster than its consumer holds decoded batches,
/// never more than the whole result would.
final class BatchChannel<Batch: Sendable>: Sendable {
    private struct State {
        var batches = Deque<Batch>()
        var finished = false
        var error: (any Error)?
        var stopped = false
        var waiter: CheckedContinuation<Batch?, any Error>?
    }

    private let state = Locked(State())

    /// True once the consumer has given up (it failed): the producer may stop decoding.
    var isStopped: Bool { state.withLock { $0.stopped } }

    /// How many batches are sent and not taken yet: how far the producer is ahead.
    var waitingCount: Int { state.withLock { $0.batches.count } }

    func send(_ batch: Batch) {
        let waiter = state.withLock { state -> CheckedContinuation<Batch?, any Error>? in
            guard !state.stopped else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.batches.append(batch)
            return nil
        }
        waiter?.resume(returning: batch)
    }

    /// Ends the stream, with the producer's error if it failed; the first call counts.
    func finish(_ error: (any Error)?) {
        let waiter = state.withLock { state -> CheckedContinuation<Batch?, any Error>? in
            guard !state.finished else { return nil }
            state.finished = true
            state.error = error
            defer { state.waiter = nil }
            return state.waiter
        }
        if let error { waiter?.resume(throwing: error) } else { waiter?.resume(returning: nil) }
    }

    func stop() {
        state.withLock { state in
            state.stopped = true
            state.batches.removeAll()
        }
    }

    private enum Ready { case batch(Batch), end((any Error)?), wait }

    /// The next batch, waiting for it; nil at the end; throws the producer's error.
    func next() async throws -> Batch? {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Ready in
                if let batch = state.batches.popFirst() { return .batch(batch) }
                if state.finished { return .end(state.error) }
                state.waiter = continuation
                return .wait
            }
            switch ready {
            case .batch(let batch): continuation.resume(returning: batch)
            case .end(let error?): continuation.resume(throwing: error)
            case .end(nil): continuation.resume(returning: nil)
            case .wait: break
            }
        }
    }
}
