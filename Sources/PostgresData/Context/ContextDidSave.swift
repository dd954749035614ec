import Foundation
import PostgresClient

/// What a save changed, as `Sendable` sets of object IDs: the payload of the did-save
/// notification, and what another context merges.
///
/// Core Data equivalent: the `userInfo` of `NSManagedObjectContextDidSave`.
public struct ContextDidSave: Sendable, Hashable {
    /// Objects inserted by the save (their permanent IDs).
    public var insertedObjectIDs: Set<ManagedObjectID>
    /// Objects updated by the save.
    public var updatedObjectIDs: Set<ManagedObjectID>
    /// Objects deleted by the save.
    public var deletedObjectIDs: Set<ManagedObjectID>
    /// The name of the context that saved.
    public var contextName: String?
    /// The WAL position after the save (with a read replica): contexts merging it read from
    /// the replica only once it has replayed this far.
    var walPosition: WALPosition?

    /// A payload, for merging changes learned elsewhere (another process, a batch request).
    public init(insertedObjectIDs: Set<ManagedObjectID> = [], updatedObjectIDs: Set<ManagedObjectID> = [],
                deletedObjectIDs: Set<ManagedObjectID> = [], contextName: String? = nil) {
        self.insertedObjectIDs = insertedObjectIDs
        self.updatedObjectIDs = updatedObjectIDs
        self.deletedObjectIDs = deletedObjectIDs
        self.contextName = contextName
    }
}
