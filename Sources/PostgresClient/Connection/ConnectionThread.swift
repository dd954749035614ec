import DequeModule
import Foundation
import Synchronization

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

    // Guarded by `condition`: the thread runs work it is lent to.
    private var isLentStorage = false

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
        let executor = asUnownedSerialExecutor()
        while let job = nextJob() {
            job.runSynchronously(on: executor)
            guard let loan = next else { continue }
            next = nil
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

    /// The next job, once there is one; nil when the thread is to end.
    private func nextJob() -> UnownedJob? {
        condition.lock()
        defer { condition.unlock() }
        var spun = false
        while jobs.isEmpty && !stopping {
            if !spun, Spinning.spin(while: { jobs.isEmpty && !stopping }, releasing: condition) {
                spun = true
                continue
            }
            sleeping = true
            condition.wait()
            sleeping = false
        }
        return jobs.popFirst()
    }
}

/// Spinning before sleeping, by one of the library's threads at a time.
///
/// Work often comes back within microseconds (the next unit of work, the end of a statement),
/// and a thread that waits for it by yielding the core a few times is found without the
/// wake-up of a sleeping thread. But on a machine whose cores the database server shares,
/// each yield that finds another thread to run costs a context switch: with every idle thread
/// spinning, 8 units of work at once cost 20–35 switches each instead of 4–7 (for a throughput
/// within the noise), while at 1 unit a spinner keeps its latency. So only one thread spins at
/// a time, for at most ``limit`` yields, and only while its yields find the core idle: a
/// yield that returns late gave the core to another thread (every core busy: a bulk fetch
/// decoding on one and the server on the other), and the spinner then sleeps at once rather
/// than take turns with the threads doing the work (without spinning, an asynchronous fetch of
/// a million objects on two cores took about 30 ms less CPU).
///
/// Nor does a thread spin while a context's block runs on another thread (``busy(_:)``): a
/// block may keep its core for its whole length (a loop of inserts), and a yield that lands
/// behind it waits out its slice, milliseconds, runnable but not running, so that work sent to
/// the spinner meanwhile waits as long (it is not asleep, so nothing wakes it). A context
/// inserting 100,000 objects while the server drew their reserved keys found a connection's
/// thread stuck that way at almost every reservation, and waited 11–12 ms for its keys at the
/// save instead of 6–8. A block that waits for its store work (``pausingBusy(_:)``) keeps no
/// core busy, and threads spin meanwhile as before.
package enum Spinning {
    private static let spinner = Atomic<Bool>(false)
    /// How many threads run a context's block now, not counting those that wait for the store.
    private static let blocks = Atomic<Int>(0)
    /// How deep the calling thread is in ``busy(_:)`` (a thread-specific value).
    private static let depthKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private static var depth: Int {
        get { Int(bitPattern: pthread_getspecific(depthKey)) }
        set { pthread_setspecific(depthKey, UnsafeRawPointer(bitPattern: newValue)) }
    }

    /// Runs `body`, a context's block or a run of its jobs, counted: no thread spins meanwhile.
    package static func busy<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        let outer = depth
        depth = outer + 1
        if outer == 0 { blocks.wrappingAdd(1, ordering: .relaxed) }
        defer {
            if outer == 0 { blocks.wrappingSubtract(1, ordering: .relaxed) }
            depth = outer
        }
        return try body()
    }

    /// Runs `body`, a wait of the calling thread's block for its store work, uncounted; a
    /// block the thread runs meanwhile (lent to another context) counts.
    package static func pausingBusy<T>(_ body: () throws -> T) rethrows -> T {
        let paused = depth
        guard paused > 0 else { return try body() }
        depth = 0
        blocks.wrappingSubtract(1, ordering: .relaxed)
        defer {
            blocks.wrappingAdd(1, ordering: .relaxed)
            depth = paused
        }
        return try body()
    }
    /// Yields before the spinner sleeps.
    static let limit = 100
    /// How long a yield that found the core idle takes at most: one that took longer ran
    /// another thread.
    static let idleYield = Duration.microseconds(20)

    /// Yields the core while `waiting()` holds, at most ``limit`` times and while each yield
    /// returns at once, with `lock` released around each yield, unless another thread spins
    /// now or runs a context's block; true when the caller spun. Call it holding `lock`.
    package static func spin(while waiting: () -> Bool, releasing lock: NSCondition) -> Bool {
        guard blocks.load(ordering: .relaxed) == 0,
              spinner.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return false }
        var yields = 0
        let clock = ContinuousClock()
        while waiting() && yields < limit {
            lock.unlock()
            let start = clock.now
            sched_yield()
            let idle = clock.now - start < idleYield
            yields += 1
            lock.lock()
            if !idle { break }
        }
        spinner.store(false, ordering: .releasing)
        return true
    }
}
