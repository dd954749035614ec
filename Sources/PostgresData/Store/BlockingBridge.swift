import Dispatch
import Foundation

/// Runs async store work for the synchronous Core Data API (`save()`, `fetch(_:)`, filling a
/// fault), blocking the calling context queue until it finishes.
///
/// The work runs as a task whose executor preference is a serial queue of its own, so it
/// never needs a thread of Swift's cooperative pool: a caller blocking a cooperative thread
/// (`performAndWait` from async code) cannot starve it. The libpq calls themselves run on
/// the connection's thread.
enum BlockingBridge {
    private final class QueueExecutor: TaskExecutor, @unchecked Sendable {
        let queue = DispatchQueue(label: "PostgresData.store-bridge")

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            let executor = asUnownedTaskExecutor()
            queue.async { job.runSynchronously(on: executor) }
        }
    }

    private static let executor = QueueExecutor()

    static func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
        let semaphore = DispatchSemaphore(value: 0)
        let result = ResultBox<T>()
        Task(executorPreference: executor) {
            do { result.set(.success(try await operation())) } catch { result.set(.failure(error)) }
            semaphore.signal()
        }
        semaphore.wait()
        return try result.get()
    }

    /// Runs `produce` as a task and hands every batch it sends to `consume` on the calling
    /// thread as soon as it arrives; returns when the producer has finished. A failing
    /// `consume` stops the hand-over (the producer runs to its end, so its connection is
    /// left clean) and its error is thrown.
    static func stream<Batch: Sendable>(_ produce: @escaping @Sendable (BatchChannel<Batch>) async throws -> Void,
                                        consume: (Batch) throws -> Void) throws {
        let channel = BatchChannel<Batch>()
        Task(executorPreference: executor) {
            do {
                try await produce(channel)
                channel.finish(nil)
            } catch {
                channel.finish(error)
            }
        }
        var failure: (any Error)?
        while true {
            let batch: Batch?
            do {
                batch = try channel.next()
            } catch {
                throw failure ?? error
            }
            guard let batch else { break }
            guard failure == nil else { continue }
            do {
                try consume(batch)
            } catch {
                failure = error
                channel.stop()
            }
        }
        if let failure { throw failure }
    }

    private final class ResultBox<T: Sendable>: @unchecked Sendable {
        private var value: Result<T, any Error>?
        private let lock = NSLock()
        func set(_ result: Result<T, any Error>) { lock.withLock { value = result } }
        func get() throws -> T { try lock.withLock { value! }.get() }
    }
}
