import DequeModule
import Foundation
import PostgresClient

/// Runs async store work for the synchronous Core Data API (`save()`, `fetch(_:)`, filling a
/// fault) on the calling thread, blocking it until the work ends.
///
/// The work runs as a task whose preferred executor is the calling thread itself: the thread
/// waits for the task's jobs and runs them, until the task is done. So the work never needs
/// another thread to make progress — not a dispatch worker, not a cooperative thread — only
/// the connection's own thread while a statement runs (``ConnectionPool/withConnection(_:)``
/// moves there) and the library's threads while it waits for a connection. A thousand
/// blocked callers deadlock nothing, and the async code between two statements (deciding,
/// registering rows) runs on the caller's thread, where the context's state lives.
enum BlockingBridge {
    /// Runs `operation` on the calling thread and returns its result.
    static func run<T>(_ operation: @escaping () async throws -> T) throws -> T {
        let box = UncheckedBox<(() async throws -> T, Result<T, any Error>?)>((operation, nil))
        if let thread = ConnectionThread.current {
            // A connection's thread lent to a context's block: its own jobs run here too.
            let finished = Locked(false)
            Task(executorPreference: thread) {
                box.value.1 = await Result { () async throws -> T in try await box.value.0() }
                finished.withLock { $0 = true }
                thread.wake()
            }
            Spinning.pausingBusy { thread.serve { finished.withLock { $0 } } }
        } else {
            let executor = CallerThreadExecutor()
            Task(executorPreference: executor) {
                box.value.1 = await Result { () async throws -> T in try await box.value.0() }
                executor.finish()
            }
            Spinning.pausingBusy { executor.runUntilFinished() }
        }
        guard let result = box.value.1 else {
            throw PostgresDataError.invalidRequest("store work ended without a result")
        }
        return try result.get()
    }

    /// A value handed to a task that runs only while its creator blocks for it (on the same
    /// thread, through ``CallerThreadExecutor``): never used from two threads at once.
    private final class UncheckedBox<Value>: @unchecked Sendable {
        var value: Value
        init(_ value: Value) { self.value = value }
    }

    /// An executor served by the thread that waits for a task's end.
    private final class CallerThreadExecutor: TaskExecutor, @unchecked Sendable {
        private let condition = NSCondition()
        private var jobs = Deque<UnownedJob>()
        private var finished = false

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            condition.lock()
            // A job arriving after the caller left (a child task that outlived the work)
            // runs on the library's threads.
            guard !finished else {
                condition.unlock()
                LibraryExecutor.shared.execute { job.runSynchronously(on: LibraryExecutor.shared.asUnownedTaskExecutor()) }
                return
            }
            jobs.append(job)
            condition.signal()
            condition.unlock()
        }

        func finish() {
            condition.lock()
            finished = true
            condition.signal()
            condition.unlock()
        }

        func runUntilFinished() {
            let executor = asUnownedTaskExecutor()
            while true {
                condition.lock()
                while jobs.isEmpty && !finished { condition.wait() }
                guard let job = jobs.popFirst() else {
                    condition.unlock()
                    return
                }
                condition.unlock()
                job.runSynchronously(on: executor)
            }
        }
    }
}

extension Result where Failure == any Error {
    /// The result of an async throwing body.
    fileprivate init(_ body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
