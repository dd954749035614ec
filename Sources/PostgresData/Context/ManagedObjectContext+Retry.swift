import Foundation

extension ManagedObjectContext {
    /// Runs `block` on the context's queue, and runs it again from a clean context when it
    /// fails for a reason that running it again can cure.
    ///
    /// Retried: serialization failures (SQLSTATE 40001, under
    /// ``PersistentStoreCoordinator/StoreOptions/saveIsolation`` `.serializable`), deadlocks
    /// (40P01), connections lost before or during the work — the errors for which
    /// ``PostgresDataError/isRetryable`` is true — and merge conflicts thrown by the `error`
    /// merge policy (another writer changed the rows first). Anything else is thrown at once.
    /// Between attempts the context is ``reset()`` and the task waits a short, randomised,
    /// growing delay; after `maximumAttempts` runs the last error is thrown.
    ///
    /// Since the context is reset, the block must start from the database: fetch its
    /// objects or look them up with ``existingObject(with:)-5tqle``, never use objects fetched
    /// before. Use a context of its own (``PersistentContainer/newBackgroundContext()``).
    ///
    /// ```swift
    /// try await context.perform(retryingUpTo: 5) {
    ///     let counter = try context.existingObject(with: counterID) as! Counter
    ///     counter.value += 1
    ///     try context.save()
    /// }
    /// ```
    ///
    /// Core Data has no equivalent: on SQLite, writers take turns and never meet a
    /// serialization failure.
    public func perform<T: Sendable>(retryingUpTo maximumAttempts: Int,
                                     _ block: @escaping @Sendable () throws -> T) async throws -> T {
        var schedule = RetrySchedule(maximumAttempts: maximumAttempts)
        while true {
            do {
                return try await perform { () throws -> T in try self.resettingWhenRetried(block) }
            } catch {
                guard let pause = schedule.pause(after: error) else { throw error }
                noteRetry(after: error, attempt: schedule.attempt - 1)
                try await Task.sleep(for: pause)
            }
        }
    }

    /// The blocking form of ``perform(retryingUpTo:_:)``, for threads that are not Swift
    /// concurrency's: runs `block` on the context's queue and waits, retrying the same
    /// errors the same way (the waits between attempts block the calling thread).
    ///
    /// Core Data has no equivalent (see ``perform(retryingUpTo:_:)``).
    public func performAndWait<T>(retryingUpTo maximumAttempts: Int, _ block: () throws -> T) throws -> T {
        var schedule = RetrySchedule(maximumAttempts: maximumAttempts)
        while true {
            do {
                return try performAndWait { () throws -> T in try resettingWhenRetried(block) }
            } catch {
                guard let pause = schedule.pause(after: error) else { throw error }
                noteRetry(after: error, attempt: schedule.attempt - 1)
                Thread.sleep(forTimeInterval: Double(pause.components.seconds) + Double(pause.components.attoseconds) / 1e18)
            }
        }
    }

    /// Logs a retry and counts it (`postgresdata.perform.retries`, by `error.type`).
    private func noteRetry(after error: any Error, attempt: Int) {
        persistentStoreCoordinator.logger.debug("attempt \(attempt) failed, retrying", metadata: [
            "error": "\(error)", "error.type": "\(StoreMetrics.errorType(error))"])
        (try? persistentStoreCoordinator.loaded())?.metrics.recordRetry(after: error)
    }

    private func resettingWhenRetried<T>(_ block: () throws -> T) throws -> T {
        do {
            return try block()
        } catch {
            if RetrySchedule.isWorthRetrying(error) { reset() }
            throw error
        }
    }
}

/// The attempts of a retried block and the randomised, doubling waits between them.
struct RetrySchedule {
    let maximumAttempts: Int
    /// The attempt about to run (1 for the first).
    private(set) var attempt = 1
    private var delay = Duration.milliseconds(5)

    /// `maximumAttempts` counts every run of the block, the first included; below 1 it
    /// counts as 1 (the block runs once).
    init(maximumAttempts: Int) {
        self.maximumAttempts = max(1, maximumAttempts)
    }

    /// The wait before running again after `error`, or nil when the error is final.
    mutating func pause(after error: any Error) -> Duration? {
        guard attempt < maximumAttempts, Self.isWorthRetrying(error) else { return nil }
        defer {
            attempt += 1
            delay = min(delay * 2, .milliseconds(500))
        }
        return delay * Double.random(in: 0.5...1.5)
    }

    static func isWorthRetrying(_ error: any Error) -> Bool {
        guard let error = error as? PostgresDataError else { return false }
        if case .mergeConflict = error { return true }
        return error.isRetryable
    }
}
