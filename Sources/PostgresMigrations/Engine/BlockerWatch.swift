import PostgresClient

/// Watches, from a second connection, which sessions block a statement while it runs,
/// so that a lock timeout can name them (after the timeout they are no longer "blocking").
final class BlockerWatch: Sendable {
    private let seen = Locked<[LockBlocker]>([])
    private let task: Task<Void, Never>

    /// Looks soon after the statement starts (a short lock timeout leaves little time), then every `interval`.
    init(pid: Int32, observer: Connection, interval: Duration = .milliseconds(100)) {
        let seen = self.seen
        task = Task {
            var wait = Duration.milliseconds(10)
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: wait)
                    wait = min(wait * 2, interval)
                    let blockers = try await LockBlocker.blocking(pid, on: observer)
                    if !blockers.isEmpty { seen.withLock { $0 = blockers } }
                } catch {
                    return
                }
            }
        }
    }

    /// Stops watching; returns the last blockers seen.
    func stop() async -> [LockBlocker] {
        task.cancel()
        await task.value
        return seen.withLock { $0 }
    }
}
