import DequeModule
import Foundation

/// A serial executor that runs every job on one dedicated OS thread.
///
/// A ``Connection`` uses one as its actor executor, so libpq's blocking calls
/// (`PQgetResult`, `PQputCopyData`, `PQconnectdbParams`) block this thread only and
/// never a thread of Swift's cooperative pool.
package final class ConnectionThread: SerialExecutor, TaskExecutor, @unchecked Sendable {
    // Guarded by `condition`.
    private var jobs = Deque<UnownedJob>()
    private var stopping = false
    private var sleeping = false
    private let condition = NSCondition()
    private nonisolated(unsafe) var threadID: pthread_t?

    init(name: String) {
        let thread = Thread { [self] in self.run() }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }

    // Touched by this executor's own thread only.
    private var next: (run: () -> Void, elsewhere: () -> Void)?
    private var lending = false
    private var serving = 0

    /// The connection thread the caller runs on, if any.
    package static var current: ConnectionThread? {
        guard let pointer = pthread_getspecific(currentKey) else { return nil }
        return Unmanaged<ConnectionThread>.fromOpaque(pointer).takeUnretainedValue()
    }

    private static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Lends this thread — the caller's — to `run` once the job under way ends, if no job of
    /// the connection waits then; otherwise `elsewhere` runs instead, at that moment. False
    /// (and nothing happens) unless the caller runs a job of this executor directly.
    ///
    /// It spares a thread hop to work that continues a unit of work which just used this
    /// connection (the rest of a context's block): the thread would go idle anyway. `run`
    /// must give the thread back as soon as ``hasWaitingJobs`` is true, and a blocking wait
    /// inside it must serve the connection meanwhile (``serve(until:)``).
    package func runNext(_ run: @escaping () -> Void, elsewhere: @escaping () -> Void) -> Bool {
        guard next == nil, !lending, serving == 0, Self.current === self else { return false }
        next = (run, elsewhere)
        return true
    }

    /// True when jobs wait for this executor.
    package var hasWaitingJobs: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !jobs.isEmpty
    }

    /// Runs this executor's jobs on the calling thread — which must be this executor's —
    /// until `isDone` returns true; call ``wake()`` after making it true. A blocking wait on a
    /// connection's thread (lent to other work) waits here, so that whoever holds the
    /// connection meanwhile is served: no wait depends on the thread it blocks.
    package func serve(until isDone: () -> Bool) {
        serving += 1
        defer { serving -= 1 }
        let executor = asUnownedSerialExecutor()
        while true {
            condition.lock()
            while jobs.isEmpty && !isDone() {
                sleeping = true
                condition.wait()
                sleeping = false
            }
            if isDone() {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: executor)
        }
    }

    /// Wakes a ``serve(until:)`` under way so that it checks its condition again.
    package func wake() {
        condition.lock()
        condition.signal()
        condition.unlock()
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        let wake = sleeping
        condition.unlock()
        // Outside the lock, so that the woken thread does not at once wait for it; only when
        // the thread sleeps (a running one takes the job when it next looks).
        if wake { condition.signal() }
    }

    package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    package func checkIsolated() {
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
        pthread_setspecific(Self.currentKey, Unmanaged.passUnretained(self).toOpaque())
        let executor = asUnownedSerialExecutor()
        while let job = nextJob() {
            job.runSynchronously(on: executor)
            guard let next else { continue }
            self.next = nil
            if hasWaitingJobs {
                next.elsewhere()
            } else {
                lending = true
                next.run()
                lending = false
            }
        }
    }

    /// The next job, once there is one; nil when the thread is to end.
    private func nextJob() -> UnownedJob? {
        condition.lock()
        defer { condition.unlock() }
        // No spinning before sleeping: on a machine whose cores the database server shares,
        // a yield hands the core to a backend and costs a context switch (measured: more
        // switches and less throughput from 8 units of work at once on).
        while jobs.isEmpty && !stopping {
            sleeping = true
            condition.wait()
            sleeping = false
        }
        return jobs.popFirst()
    }
}
