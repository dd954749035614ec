/// Which writes a context's reads from the read replica must see.
///
/// A streaming replica replays the primary's WAL a little after each commit (typically
/// milliseconds; longer under load). Reads that must see certain writes go to the primary
/// until the replica has replayed them, checked with `pg_last_wal_replay_lsn()` against the
/// WAL position each save noted after its commit.
///
/// No Core Data equivalent: Core Data's stores have no replicas. Set it with
/// ``ManagedObjectContext/replicaConsistency``.
public enum ReplicaConsistency: Sendable, Hashable {
    /// Whatever the replica has replayed: the cheapest, and possibly behind the context's
    /// own saves.
    case eventual
    /// The context's own saves and batch requests (read-your-writes); the default.
    case ownWrites
    /// Every save and batch request of the coordinator, by any of its contexts: what one
    /// process wrote. Use it for a read-only context that must see what a writing context
    /// of the same request just saved.
    case coordinatorWrites
}
