import PostgresClient

/// How the store work a context starts reaches the database: whether its reads may go to
/// the read replica, from which replayed position on, and where its writes report the
/// position of their commit.
///
/// The context binds one to ``current`` around its store work; the coordinator's read and
/// write paths consult it. Work started without one reads from the primary.
final class StoreAccess: Sendable {
    /// Reads may run on the replica.
    let readsFromReplica: Bool
    /// The replica serves reads only once it has replayed this far (read-your-writes).
    let requiredReplayPosition: WALPosition?
    /// Told the WAL position after each commit of the work's writes (with a replica only).
    let didCommit: (@Sendable (WALPosition) -> Void)?

    init(readsFromReplica: Bool, requiredReplayPosition: WALPosition?, didCommit: (@Sendable (WALPosition) -> Void)? = nil) {
        self.readsFromReplica = readsFromReplica
        self.requiredReplayPosition = requiredReplayPosition
        self.didCommit = didCommit
    }

    /// Runs `operation` with this access bound.
    func run<T: Sendable>(_ operation: @Sendable () async throws -> T) async throws -> T {
        try await Self.$current.withValue(self) { try await operation() }
    }

    @TaskLocal static var current: StoreAccess?
}

extension Optional where Wrapped == StoreAccess {
    /// Runs `operation` with the access bound, or as it is when there is none (no replica).
    func run<T: Sendable>(_ operation: @Sendable () async throws -> T) async throws -> T {
        guard let access = self else { return try await operation() }
        return try await access.run(operation)
    }
}
