import DequeModule
import Dispatch
import PostgresClient

/// Batches handed from a producing task to a thread that blocks for them: the store side
/// reads and decodes batch k while the context registers batch k − 1.
///
/// The buffer is unbounded: a producer faster than its consumer holds decoded batches,
/// never more than the whole result would.
final class BatchChannel<Batch: Sendable>: Sendable {
    private struct State {
        var batches = Deque<Batch>()
        var finished = false
        var error: (any Error)?
        var stopped = false
    }

    private let state = Locked(State())
    private let available = DispatchSemaphore(value: 0)

    /// True once the consumer has given up (it failed): the producer may stop decoding.
    var isStopped: Bool { state.withLock { $0.stopped } }

    func send(_ batch: Batch) {
        let accepted = state.withLock { state in
            guard !state.stopped else { return false }
            state.batches.append(batch)
            return true
        }
        if accepted { available.signal() }
    }

    /// Ends the stream, with the producer's error if it failed; the first call counts.
    func finish(_ error: (any Error)?) {
        let first = state.withLock { state in
            guard !state.finished else { return false }
            state.finished = true
            state.error = error
            return true
        }
        if first { available.signal() }
    }

    func stop() {
        state.withLock { state in
            state.stopped = true
            state.batches.removeAll()
        }
    }

    /// The next batch, waiting for it; nil at the end; throws the producer's error.
    func next() throws -> Batch? {
        available.wait()
        return try state.withLock { state in
            if let batch = state.batches.popFirst() { return batch }
            if let error = state.error { throw error }
            return nil
        }
    }
}
