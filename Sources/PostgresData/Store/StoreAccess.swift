import PostgresClient

/// How the store work a context starts reaches the database: the snapshot its reads see
/// (a pinned context's), whether they may go to the read replica and from which replayed
/// position on, and where its writes report the position of their commit.
///
/// The context makes one for each store operation (``ManagedObjectContext/makeStoreAccess(readsFromReplica:)``)
/// and passes it down as an argument; the coordinator's read and write paths consult it. Work
/// passed none (nil: the store has no replica and the context is not pinned, or the work is
/// the store's own) reads from the primary.
final class StoreAccess: Sendable {
    /// Reads may run on the replica.
    let readsFromReplica: Bool
    /// The replica serves reads only once it has replayed this far (read-your-writes).
    let requiredReplayPosition: WALPosition?
    /// Told the WAL position after each commit of the work's writes (with a replica only).
    let didCommit: (@Sendable (WALPosition) -> Void)?
    /// The snapshot the work's reads see, for a pinned context; its reads then go nowhere else.
    let generation: QueryGeneration?

    init(readsFromReplica: Bool, requiredReplayPosition: WALPosition?, generation: QueryGeneration? = nil,
         didCommit: (@Sendable (WALPosition) -> Void)? = nil) {
        self.readsFromReplica = readsFromReplica
        self.requiredReplayPosition = requiredReplayPosition
        self.generation = generation
        self.didCommit = didCommit
    }

}
