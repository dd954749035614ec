/// Names a snapshot of the database that contexts can be pinned to, so that every read they
/// make — fetches, faults, counts, prefetches, batched faults, asynchronous fetches — sees the
/// data as it was at one moment, whatever other contexts and processes commit meanwhile.
///
/// Core Data equivalent: `NSQueryGenerationToken`. Pass ``current`` to
/// ``ManagedObjectContext/setQueryGenerationFrom(_:)`` to pin a context to the database as
/// it is at its next read; read ``ManagedObjectContext/queryGenerationToken`` to pin
/// another context to the very same snapshot:
///
/// ```swift
/// try report.setQueryGenerationFrom(.current)
/// try audit.setQueryGenerationFrom(report.queryGenerationToken)   // the same snapshot
/// ```
///
/// On PostgreSQL a generation is a `REPEATABLE READ READ ONLY` transaction held open on one
/// pooled connection; see <doc:Concurrency#Query-generations> for what that costs.
public struct QueryGenerationToken: Sendable, Hashable, CustomStringConvertible {
    /// The snapshot, or nil for ``current``.
    let generation: QueryGeneration?

    init(generation: QueryGeneration?) {
        self.generation = generation
    }

    /// The generation current when the pinned context next reads: each context pinned with
    /// it gets a snapshot of its own (share one through
    /// ``ManagedObjectContext/queryGenerationToken``).
    ///
    /// Core Data equivalent: `NSQueryGenerationToken.current`.
    public static let current = QueryGenerationToken(generation: nil)

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.generation === rhs.generation }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(generation.map(ObjectIdentifier.init))
    }

    public var description: String {
        guard let generation else { return "QueryGenerationToken(current)" }
        return "QueryGenerationToken(\(generation.snapshotID.map { "snapshot \($0)" } ?? "not read yet"))"
    }
}
