import Foundation
import PostgresClient

/// Changes of a context's objects since the last notification (inserted, updated,
/// deleted, refreshed), as object IDs.
///
/// Core Data equivalent: the `userInfo` of `NSManagedObjectContextObjectsDidChange`.
public struct ContextObjectsDidChange: Sendable, Hashable {
    /// Objects inserted into the context, or by a save merged into it (those are not
    /// registered until something loads them).
    public var insertedObjectIDs: Set<ManagedObjectID>
    /// Objects whose values the context's code changed.
    public var updatedObjectIDs: Set<ManagedObjectID>
    /// Objects deleted in the context, or removed because their rows are gone.
    public var deletedObjectIDs: Set<ManagedObjectID>
    /// Objects refreshed from the store or from another context's save.
    public var refreshedObjectIDs: Set<ManagedObjectID>
}
