import DequeModule
import Foundation

/// The library's own small, fixed set of threads, with timers.
///
/// It runs the store work that must go on however many threads callers block (dispatch
/// workers in `performAndWait`, cooperative threads in synchronous calls from async code):
/// waiting for a pooled connection and the code that then holds it, lease timeouts, background
/// connects, statement timeouts and the decoding of streamed batches. So no wait of the
/// library depends on a thread that callers can exhaust, and the number of threads the
/// library adds is fixed (``threadCount``), whatever the number of tasks.
///
/// Nothing run here may block: blocking libpq work runs on each connection's own thread.
package final class LibraryExecutor: TaskExecutor, @unchecked Sendable {
    /// The executor every pool and context of the process shares.
    package static let shared = LibraryExecutor(threadCount: 2, name: "PostgresClient.library")

    /// How many threads serve it.
    package let threadCount: Int

    private enum Work {
        case job(UnownedJob)
        case action(@Sendable () -> Void)
    }

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var work = Deque<Work>()
    private var timers = TimerHeap()
    private var idleThreads = 0

    private init(threadCount: Int, name: String) {
        self.threadCount = threadCount
        Thread.startThreads(threadCount, named: name, stackSize: 1 << 20) { [self] in self.run() }
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        add(.job(job))
    }

    /// Runs `action` on one of the executor's threads.
    package func execute(_ action: @escaping @Sendable () -> Void) {
        add(.action(action))
    }

    /// Runs `action` on one of the executor's threads once `delay` has passed, unless the
    /// returned timer is cancelled first.
    @discardableResult
    package func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> LibraryTimer {
        let (deadline, overflow) = DispatchTime.now().uptimeNanoseconds.addingReportingOverflow(delay.nanosecondsClamped)
        let timer = LibraryTimer(deadline: overflow ? .max : deadline, action: action, executor: self)
        condition.lock()
        let earliest = timers.insert(timer)
        if earliest { condition.signal() }
        condition.unlock()
        return timer
    }

    private func add(_ item: Work) {
        condition.lock()
        work.append(item)
        if idleThreads > 0 { condition.signal() }
        condition.unlock()
    }

    private func run() {
        let executor = asUnownedTaskExecutor()
        while true {
            condition.lock()
            var next: Work?
            while next == nil {
                let now = DispatchTime.now().uptimeNanoseconds
                if let due = timers.popDue(now: now) {
                    next = .action(due)
                } else if let item = work.popFirst() {
                    next = item
                } else {
                    idleThreads += 1
                    if let deadline = timers.nextDeadline {
                        let seconds = Double(deadline &- min(deadline, now)) / 1e9
                        _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
                    } else {
                        condition.wait()
                    }
                    idleThreads -= 1
                }
            }
            condition.unlock()
            switch next {
            case .job(let job): job.runSynchronously(on: executor)
            case .action(let action): action()
            case nil: break
            }
        }
    }

    fileprivate func cancel(_ timer: LibraryTimer) {
        condition.lock()
        if timer.action != nil {
            timer.action = nil
            timers.didCancel()
        }
        condition.unlock()
    }
}

/// A timer of ``LibraryExecutor/schedule(after:_:)``; ``cancel()`` stops it if it has not fired.
package final class LibraryTimer: @unchecked Sendable {
    let deadline: UInt64
    // Guarded by the executor's lock.
    fileprivate var action: (@Sendable () -> Void)?
    private unowned let executor: LibraryExecutor

    fileprivate init(deadline: UInt64, action: @escaping @Sendable () -> Void, executor: LibraryExecutor) {
        self.deadline = deadline
        self.action = action
        self.executor = executor
    }

    /// Stops the timer; its action will not run unless it already started.
    package func cancel() { executor.cancel(self) }
}

/// Timers ordered by deadline (a binary min-heap); cancelled ones are dropped when due, or
/// all at once when they outnumber the live ones.
private struct TimerHeap {
    private var heap: [LibraryTimer] = []
    private var cancelled = 0

    mutating func didCancel() {
        cancelled += 1
        guard cancelled > 1024 && cancelled * 2 > heap.count else { return }
        let live = heap.filter { $0.action != nil }
        heap.removeAll(keepingCapacity: true)
        cancelled = 0
        for timer in live { _ = insert(timer) }
    }

    var nextDeadline: UInt64? { heap.first?.deadline }

    /// Adds `timer`; true when it is now the earliest.
    mutating func insert(_ timer: LibraryTimer) -> Bool {
        heap.append(timer)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
        return child == 0
    }

    /// The action of a timer due at `now` (cancelled timers are dropped on the way).
    mutating func popDue(now: UInt64) -> (@Sendable () -> Void)? {
        while let first = heap.first, first.deadline <= now {
            removeFirst()
            if let action = first.action {
                first.action = nil
                return action
            }
            cancelled -= 1
        }
        return nil
    }

    private mutating func removeFirst() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count && heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

extension Thread {
    /// Starts `count` threads named `name.0`, `name.1`, … that each run `body` (the loops of
    /// the library's own thread pools).
    package static func startThreads(_ count: Int, named name: String, stackSize: Int, _ body: @escaping @Sendable () -> Void) {
        for index in 0..<count {
            let thread = Thread(block: body)
            thread.name = "\(name).\(index)"
            thread.stackSize = stackSize
            thread.start()
        }
    }
}

extension Duration {
    /// The duration in nanoseconds, 0 when negative, `UInt64.max` when too long to count.
    package var nanosecondsClamped: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        let (total, overflow2) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow2 ? .max : total
    }
}
