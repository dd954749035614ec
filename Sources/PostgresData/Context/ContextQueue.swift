import DequeModule
import Foundation
import PostgresClient

/// The queue of a context: its blocks run one at a time, in the order they were submitted,
/// and only one thread at a time uses the context.
///
/// Two things make it up:
/// - **the turn**: one block at a time — a `perform` block (sync or async, from its start to
///   its end, awaits included), a `performAndWait` block (run on the caller's thread), a
///   merge. Blocks wait for the turn in FIFO order, a waiting task suspends, a waiting
///   thread blocks.
/// - **a serial task executor**: the jobs of the block holding the turn, run one at a time on
///   the shared context threads (``ContextThreads``) or, for a main-queue context, on the
///   main queue. While it runs them, a thread is "on the queue" (``isCurrent``).
///
/// When a block comes back from a statement, the connection's thread — idle until its next
/// lease — runs the block on (it is *lent*), instead of waking a context thread: a unit of
/// work of a fetch and a save crosses threads three times (into `perform`, to the
/// connection, back to the caller) instead of six. The lent thread goes back to its
/// connection as soon as the connection has work, and a blocking wait there (a synchronous
/// fetch, save or fault, a `performAndWait`) serves the connection while it waits
/// (``ConnectionThread/serve(until:)``).
///
/// No wait here depends on a thread of Dispatch's or of the cooperative pool: the jobs of a
/// context run on the library's threads, and a task waiting for the turn resumes there.
final class ContextQueue: TaskExecutor, @unchecked Sendable {
    let isMain: Bool

    private let lock = NSLock()
    // Guarded by `lock`.
    private var jobs = Deque<UnownedJob>()
    private var scheduled = false
    private var turnHeld = false
    private var turnWaiters = Deque<TurnWaiter>()

    private enum TurnWaiter {
        case task(CheckedContinuation<Void, Never>)
        case thread(DispatchSemaphore)
        /// A connection's thread lent to a block: it serves its connection while it waits.
        case connectionThread(ConnectionThread, Locked<Bool>)
    }

    init(isMain: Bool) {
        self.isMain = isMain
    }

    // MARK: Being on the queue

    /// The queues whose work the current thread runs now, innermost last.
    private static let current = ThreadLocalQueues()

    /// True when the current thread runs this queue's work (a job of it, or a
    /// `performAndWait` block); for a main-queue context, also on the main thread.
    var isCurrent: Bool {
        if isMain && Thread.isMainThread { return true }
        return Self.current.contains(self)
    }

    /// Runs `body` marked as on this queue.
    func runMarked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        Self.current.push(self)
        defer { Self.current.pop() }
        return try Spinning.busy(body)
    }

    // MARK: The turn

    /// Waits for the turn without blocking a thread. Call it with this queue as the task's
    /// executor preference, so that the task resumes here.
    func acquireTurn() async {
        let granted = lock.withLock { () -> Bool in
            guard turnHeld else {
                turnHeld = true
                return true
            }
            return false
        }
        if granted { return }
        await withCheckedContinuation { continuation in
            let now = lock.withLock { () -> Bool in
                guard turnHeld else {
                    turnHeld = true
                    return true
                }
                turnWaiters.append(.task(continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Waits for the turn, blocking the calling thread.
    func acquireTurnBlocking() {
        let connectionThread = ConnectionThread.current
        let waiter: TurnWaiter? = lock.withLock {
            guard turnHeld else {
                turnHeld = true
                return nil
            }
            let waiter = connectionThread.map { TurnWaiter.connectionThread($0, Locked(false)) } ?? .thread(DispatchSemaphore(value: 0))
            turnWaiters.append(waiter)
            return waiter
        }
        switch waiter {
        case .thread(let semaphore): semaphore.wait()
        case .connectionThread(let thread, let granted): thread.serve { granted.withLock { $0 } }
        case .task, nil: break
        }
    }

    /// Passes the turn to the next waiter, or frees it.
    func releaseTurn() {
        let next: TurnWaiter? = lock.withLock {
            if let next = turnWaiters.popFirst() { return next }
            turnHeld = false
            return nil
        }
        switch next {
        case .task(let continuation): continuation.resume()
        case .thread(let semaphore): semaphore.signal()
        case .connectionThread(let thread, let granted):
            granted.withLock { $0 = true }
            thread.wake()
        case nil: break
        }
    }

    // MARK: Running blocks

    /// Runs `body` as a block of the queue: after the blocks submitted before it, with the
    /// turn, its jobs on this queue. The calling task suspends meanwhile.
    func run<T, E: Error>(_ body: () async throws(E) -> T) async throws(E) -> T {
        try await withTaskExecutorPreference(self) { () async throws(E) -> T in
            await self.acquireTurn()
            defer { self.releaseTurn() }
            return try await body()
        }
    }

    /// Submits a synchronous block and returns at once (a merge, a notification). Detached:
    /// the submitter's task-locals (its span) are not the block's.
    func async(_ block: @escaping @Sendable () -> Void) {
        Task.detached(executorPreference: self) {
            await self.acquireTurn()
            block()
            self.releaseTurn()
        }
    }

    // MARK: The executor

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let schedule = lock.withLock { () -> Bool in
            jobs.append(job)
            guard !scheduled else { return false }
            scheduled = true
            return true
        }
        if schedule { scheduleDrain() }
    }

    private func scheduleDrain() {
        if isMain {
            DispatchQueue.main.async { self.drain() }
        } else if let thread = ConnectionThread.current,
                  thread.runNext({ self.drain(borrowing: thread) }, elsewhere: { ContextThreads.shared.submit(self) }) {
            return
        } else {
            ContextThreads.shared.submit(self)
        }
    }

    /// Runs the queued jobs; after a few it yields the thread to other queues. On a borrowed
    /// connection thread, it gives the thread back as soon as the connection has work.
    func drain(borrowing thread: ConnectionThread? = nil) {
        let executor = asUnownedTaskExecutor()
        Self.current.push(self)
        defer { Self.current.pop() }
        // Counted as one run: no library thread spins meanwhile (see `Spinning`).
        let emptied = Spinning.busy { () -> Bool in
            for _ in 0..<64 {
                // A borrowed connection thread goes back to its connection as soon as it has work.
                if let thread, thread.hasWaitingJobs { break }
                let job: UnownedJob? = lock.withLock {
                    if let job = jobs.popFirst() { return job }
                    scheduled = false
                    return nil
                }
                guard let job else { return true }
                job.runSynchronously(on: executor)
            }
            return false
        }
        if emptied { return }
        let more = lock.withLock { () -> Bool in
            if jobs.isEmpty { scheduled = false }
            return scheduled
        }
        guard more else { return }
        if thread != nil { ContextThreads.shared.submit(self) } else { scheduleDrain() }
    }
}

/// The threads that run the jobs of private-queue contexts: a fixed number, shared by every
/// context of the process (``threadCount``). A block that blocks its thread (synchronous store
/// work, ``ManagedObjectContext/performAndWait(_:)`` on another context) holds one of them;
/// what it waits for never needs one.
final class ContextThreads: @unchecked Sendable {
    static let shared = ContextThreads(threadCount: max(8, 4 * ProcessInfo.processInfo.activeProcessorCount))

    let threadCount: Int
    private let condition = NSCondition()
    private var ready = Deque<ContextQueue>()
    private var sleepers = 0

    private init(threadCount: Int) {
        self.threadCount = threadCount
        // Predicates and user code run here: the stack of a main thread.
        Thread.startThreads(threadCount, named: "PostgresData.context", stackSize: 8 << 20) { [self] in self.run() }
    }

    func submit(_ queue: ContextQueue) {
        condition.lock()
        ready.append(queue)
        let wake = sleepers > 0
        condition.unlock()
        // Outside the lock, so that the woken thread does not at once wait for it.
        if wake { condition.signal() }
    }

    private func run() {
        while true {
            condition.lock()
            // One library thread at a time spins before sleeping (see `Spinning`).
            _ = Spinning.spin(while: { ready.isEmpty }, releasing: condition)
            while ready.isEmpty {
                sleepers += 1
                condition.wait()
                sleepers -= 1
            }
            let queue = ready.removeFirst()
            condition.unlock()
            queue.drain()
        }
    }
}

/// A per-thread stack of the queues whose work the thread runs.
private final class ThreadLocalQueues: @unchecked Sendable {
    private var key = pthread_key_t()

    init() {
        pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<Stack>.fromOpaque(pointer).release() }
        }
    }

    private final class Stack {
        var queues: [ObjectIdentifier] = []
    }

    private var stack: Stack {
        if let pointer = pthread_getspecific(key) { return Unmanaged<Stack>.fromOpaque(pointer).takeUnretainedValue() }
        let stack = Stack()
        pthread_setspecific(key, Unmanaged.passRetained(stack).toOpaque())
        return stack
    }

    func push(_ queue: ContextQueue) { stack.queues.append(ObjectIdentifier(queue)) }
    func pop() { stack.queues.removeLast() }
    func contains(_ queue: ContextQueue) -> Bool {
        guard let pointer = pthread_getspecific(key) else { return false }
        return Unmanaged<Stack>.fromOpaque(pointer).takeUnretainedValue().queues.contains(ObjectIdentifier(queue))
    }
}
