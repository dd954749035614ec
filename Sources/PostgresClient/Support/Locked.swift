import Foundation

/// A value behind a lock, shared between threads.
///
/// Built on `NSLock` (a pthread mutex) rather than `Synchronization.Mutex`, whose futex
/// fast path the thread sanitizer cannot see through: with this lock a `--sanitize=thread`
/// run reports real races only.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
