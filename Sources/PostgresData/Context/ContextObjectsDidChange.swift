import Foundation
import PostgresClient

/// Changes of a context's objects since the last notification (inserted, updated,
/// deleted, refreshed), as object IDs.
///
/// Core Data equivalent: the `userInfo` of `NSManagedObjectContextObjectsDidChange`.
public struct ContextObjectsDidChange: Sendable, Hashable {
    /// Objects inserted into the context, or by a save merged into it (those are not
    /// registered until something loads them).
    public var insertedObjectIDs: Set<ManagedObjectID> {
        get { inserted.set }
        set { inserted = CollectedObjectIDs(newValue) }
    }
    /// Objects whose values the context's code changed.
    public var updatedObjectIDs: Set<ManagedObjectID> {
        get { updated.set }
        set { updated = CollectedObjectIDs(newValue) }
    }
    /// Objects deleted in the context, or removed because their rows are gone.
    public var deletedObjectIDs: Set<ManagedObjectID>
    /// Objects refreshed from the store or from another context's save.
    public var refreshedObjectIDs: Set<ManagedObjectID>

    private var inserted: CollectedObjectIDs
    private var updated: CollectedObjectIDs

    init(inserted: CollectedObjectIDs, updated: CollectedObjectIDs, deletedObjectIDs: Set<ManagedObjectID>,
         refreshedObjectIDs: Set<ManagedObjectID>) {
        self.inserted = inserted
        self.updated = updated
        self.deletedObjectIDs = deletedObjectIDs
        self.refreshedObjectIDs = refreshedObjectIDs
    }
}
