import DequeModule
import Foundation

/// A serial executor that runs every job on one dedicated OS thread.
///
/// A ``Connection`` uses one as its actor executor, so libpq's blocking calls
/// (`PQgetResult`, `PQputCopyData`, `PQconnectdbParams`) block this thread only and
/// never a thread of Swift's cooperative pool.
final class ConnectionThread: SerialExecutor, TaskExecutor, @unchecked Sendable {
    // Guarded by `condition`.
    private var jobs = Deque<UnownedJob>()
    private var stopping = false
    private var sleeping = false
    private let condition = NSCondition()
    private nonisolated(unsafe) var threadID: pthread_t?
    static let spinsBeforeSleeping = 100

    init(name: String) {
        let thread = Thread { [self] in self.run() }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        let wake = sleeping
        condition.unlock()
        // Outside the lock, so that the woken thread does not at once wait for it; only when
        // the thread sleeps (a running one takes the job when it next looks).
        if wake { condition.signal() }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func checkIsolated() {
        condition.lock()
        let owner = threadID
        condition.unlock()
        precondition(owner.map { pthread_equal($0, pthread_self()) != 0 } ?? false,
                     "expected to run on the connection's thread")
    }

    /// True on this executor's thread.
    var isCurrent: Bool {
        condition.lock()
        defer { condition.unlock() }
        return threadID.map { pthread_equal($0, pthread_self()) != 0 } ?? false
    }

    /// Lets the thread end once the jobs already enqueued have run.
    func shutdown() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        condition.lock()
        threadID = pthread_self()
        condition.unlock()
        let executor = asUnownedSerialExecutor()
        var batch = Deque<UnownedJob>()
        while true {
            condition.lock()
            // The next job often comes within microseconds (the rest of a unit of work):
            // yielding the core a few times first spares the wake-up of a sleeping thread.
            var spins = 0
            while jobs.isEmpty && !stopping && spins < Self.spinsBeforeSleeping {
                condition.unlock()
                sched_yield()
                spins += 1
                condition.lock()
            }
            while jobs.isEmpty && !stopping {
                sleeping = true
                condition.wait()
                sleeping = false
            }
            if jobs.isEmpty && stopping {
                condition.unlock()
                return
            }
            swap(&batch, &jobs)
            condition.unlock()
            while let job = batch.popFirst() {
                job.runSynchronously(on: executor)
            }
        }
    }
}
