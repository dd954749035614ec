import Foundation
import PostgresClient

/// What a save changed, as `Sendable` sets of object IDs: the payload of the did-save
/// notification, and what another context merges.
///
/// Core Data equivalent: the `userInfo` of `NSManagedObjectContextDidSave`.
public struct ContextDidSave: Sendable, Hashable {
    /// Objects inserted by the save (their permanent IDs).
    public var insertedObjectIDs: Set<ManagedObjectID> {
        get { inserted.set }
        set { inserted = CollectedObjectIDs(newValue) }
    }
    /// Objects updated by the save.
    public var updatedObjectIDs: Set<ManagedObjectID> {
        get { updated.set }
        set { updated = CollectedObjectIDs(newValue) }
    }
    /// Objects deleted by the save.
    public var deletedObjectIDs: Set<ManagedObjectID> {
        get { deleted.set }
        set { deleted = CollectedObjectIDs(newValue) }
    }
    // Kept as the save listed them until someone asks for a set (CollectedObjectIDs).
    private var inserted: CollectedObjectIDs
    private var updated: CollectedObjectIDs
    private var deleted: CollectedObjectIDs
    /// The name of the context that saved.
    public var contextName: String?
    /// The WAL position after the save (with a read replica): contexts merging it read from
    /// the replica only once it has replayed this far.
    var walPosition: WALPosition?

    /// A payload, for merging changes learned elsewhere (another process, a batch request).
    public init(insertedObjectIDs: Set<ManagedObjectID> = [], updatedObjectIDs: Set<ManagedObjectID> = [],
                deletedObjectIDs: Set<ManagedObjectID> = [], contextName: String? = nil) {
        inserted = CollectedObjectIDs(insertedObjectIDs)
        updated = CollectedObjectIDs(updatedObjectIDs)
        deleted = CollectedObjectIDs(deletedObjectIDs)
        self.contextName = contextName
    }

    /// A save's payload, with the IDs as the save listed them.
    init(inserted: [ManagedObjectID], updated: [ManagedObjectID], deleted: [ManagedObjectID], contextName: String?) {
        self.inserted = CollectedObjectIDs(collecting: inserted)
        self.updated = CollectedObjectIDs(collecting: updated)
        self.deleted = CollectedObjectIDs(collecting: deleted)
        self.contextName = contextName
    }
}
