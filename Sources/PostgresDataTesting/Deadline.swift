/// Bounded waiting for tests: a condition polled until it holds, or an operation raced
/// against a time limit. A test that waits for something that never happens fails with
/// what it was waiting for, instead of hanging the whole run.
///
/// ```swift
/// try await Deadline.poll("the statement waits on the lock") {
///     try await observer.query(…)[0].decode(Int64.self, at: 0) > 0
/// }
/// let notification = try await Deadline.within(.seconds(30), "the merge notification") { await iterator.next() }
/// ```
public enum Deadline {
    /// Evaluates `condition` every `interval` until it is true; throws ``DeadlineExceeded`` after `limit`.
    public static func poll(_ what: String, limit: Duration = .seconds(60), interval: Duration = .milliseconds(10),
                            _ condition: () async throws -> Bool) async throws {
        let clock = ContinuousClock()
        let end = clock.now + limit
        while try await !condition() {
            guard clock.now < end else { throw DeadlineExceeded(what: what, limit: limit) }
            try await Task.sleep(for: interval)
        }
    }

    /// Runs `operation`, cancelling it and throwing ``DeadlineExceeded`` if it has not ended after `limit`.
    public static func within<T: Sendable>(_ limit: Duration, _ what: String,
                                           _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw DeadlineExceeded(what: what, limit: limit)
            }
            return value
        }
    }
}

/// What a test waited for in vain, and for how long.
public struct DeadlineExceeded: Error, CustomStringConvertible {
    /// What the test waited for.
    public var what: String
    /// How long it waited.
    public var limit: Duration

    public var description: String { "waited \(limit) for \(what)" }
}
