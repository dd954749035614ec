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

    // Guarded by `condition`: the thread sleeps with nothing to do and may be lent (only
    // ``lendIdleThread(_:elsewhere:)`` clears it), and what it was lent to.
    private var idle = false
    private var lent: Lending?
    private var isLentStorage = false
    // Guarded by `idleThreads`' lock: the thread is in that list.
    private var listed = false

    /// Threads that went to sleep idle, latest last; an entry may be stale (the thread woke
    /// since), which a lender finds out and drops.
    private static let idleThreads = Locked<[ConnectionThread]>([])

    /// Work a thread is lent to, and what to do instead when the thread's connection has
    /// work by the time it would start.
    private typealias Lending = (run: () -> Void, elsewhere: () -> Void)

    // Touched by this executor's own thread only.
    private var next: Lending?
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

    /// Lends a connection's thread that sleeps with nothing to do to `run` (the block of a
    /// context that starts), waking it: a block that then needs a connection takes this
    /// thread's own when it is free, and runs its statement without a thread hop. False (and
    /// nothing happens) when no connection thread is idle. `run` obeys the rules of
    /// ``runNext(_:elsewhere:)``; `elsewhere` runs instead if the connection has work first.
    package static func lendIdleThread(_ run: @escaping () -> Void, elsewhere: @escaping () -> Void) -> Bool {
        while let thread = idleThreads.withLock({ threads -> ConnectionThread? in
            guard let thread = threads.popLast() else { return nil }
            thread.listed = false
            return thread
        }) {
            thread.condition.lock()
            guard thread.idle, thread.jobs.isEmpty, thread.lent == nil, !thread.stopping else {
                thread.condition.unlock()
                continue
            }
            thread.idle = false
            thread.lent = (run, elsewhere)
            thread.condition.unlock()
            thread.condition.signal()
            return true
        }
        return false
    }

    /// True while the thread runs work it is lent to: a statement sent to its connection now
    /// would wait for that work's next pause.
    package var isLent: Bool {
        condition.lock()
        defer { condition.unlock() }
        return isLentStorage
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
        defer { Self.idleThreads.withLock { threads in threads.removeAll { $0 === self } } }
        let executor = asUnownedSerialExecutor()
        while let work = nextWork() {
            let loan: Lending
            switch work {
            case .job(let job):
                job.runSynchronously(on: executor)
                guard let next else { continue }
                self.next = nil
                loan = next
            case .lent(let lent):
                loan = lent
            }
            if hasWaitingJobs {
                loan.elsewhere()
            } else {
                setLent(true)
                loan.run()
                setLent(false)
            }
        }
    }

    private func setLent(_ lent: Bool) {
        lending = lent
        condition.lock()
        isLentStorage = lent
        condition.unlock()
    }

    private enum Work {
        case job(UnownedJob)
        case lent(Lending)
    }

    /// The next job or lending, once there is one; nil when the thread is to end.
    private func nextWork() -> Work? {
        condition.lock()
        defer { condition.unlock() }
        // No spinning before sleeping: on a machine whose cores the database server shares,
        // a yield hands the core to a backend and costs a context switch (measured: more
        // switches and less throughput from 8 units of work at once on).
        while jobs.isEmpty && lent == nil && !stopping {
            idle = true
            Self.idleThreads.withLock { threads in
                guard !listed else { return }
                listed = true
                threads.append(self)
            }
            sleeping = true
            condition.wait()
            sleeping = false
            idle = false
        }
        if let lent {
            self.lent = nil
            return .lent(lent)
        }
        return jobs.popFirst().map(Work.job)
    }
}
