import Foundation
import PostgresClient
import Synchronization

/// The identity of a managed object: its entity and primary key. `Sendable`, so pass IDs,
/// never objects, between contexts and tasks.
///
/// Core Data equivalent: `NSManagedObjectID`. An inserted object has a temporary ID until
/// its context saves it (or ``ManagedObjectContext/obtainPermanentIDs(for:)-4cry7`` allocates a
/// key early); then its ID is permanent: the row's `id`.
///
/// ```swift
/// let teamID = team.objectID                       // in one context
/// let team = otherContext.object(with: teamID)     // a fault in another, no query yet
/// ```
public struct ManagedObjectID: Sendable, Hashable, CustomStringConvertible {
    /// The entity of the object. (Entity descriptions are immortal: IDs, copied and hashed
    /// by the million, refer to theirs without reference counting.)
    public unowned(unsafe) let entity: EntityDescription
    /// The primary key for a permanent ID; a process-unique number for a temporary one.
    let key: Int64
    /// True until the object is saved (or given a permanent ID).
    public let isTemporaryID: Bool

    init(entity: EntityDescription, primaryKey: Int64) {
        self.entity = entity
        self.key = primaryKey
        self.isTemporaryID = false
    }

    private init(temporaryFor entity: EntityDescription, number: Int64) {
        self.entity = entity
        self.key = number
        self.isTemporaryID = true
    }

    private static let temporaryCounter = Atomic<Int64>(0)

    /// The ID of an object not in any context yet: temporary, number 0. A context gives it a
    /// number of its own when the object is inserted; fetched objects get their row's ID.
    static func unassigned(for entity: EntityDescription) -> ManagedObjectID {
        ManagedObjectID(temporaryFor: entity, number: 0)
    }

    var isUnassigned: Bool { isTemporaryID && key == 0 }

    static func temporary(for entity: EntityDescription) -> ManagedObjectID {
        let number = temporaryCounter.add(1, ordering: .relaxed).newValue
        return ManagedObjectID(temporaryFor: entity, number: number)
    }

    /// The row's primary key, or nil while the ID is temporary.
    public var primaryKey: Int64? { isTemporaryID ? nil : key }

    /// A URL naming the object, to store or send and turn back into an ID with
    /// ``PersistentStoreCoordinator/managedObjectID(forURIRepresentation:)``:
    /// `x-postgresdata://Item/p42` (`t17` for a temporary ID, which no other process knows).
    public func uriRepresentation() -> URL {
        URL(string: "x-postgresdata://\(entity.name)/\(isTemporaryID ? "t" : "p")\(key)")!
    }

    public var description: String {
        "\(entity.name)/\(isTemporaryID ? "t" : "p")\(key)"
    }

    /// IDs of one row are equal: within a hierarchy of entities (one table), the ID of a
    /// sub-entity's row equals the ID naming it as its parent entity.
    public static func == (lhs: ManagedObjectID, rhs: ManagedObjectID) -> Bool {
        lhs.key == rhs.key && lhs.isTemporaryID == rhs.isTemporaryID
            && (lhs.entity === rhs.entity || (lhs.entity.root === rhs.entity.root && !lhs.isTemporaryID))
    }

    // Keys rarely repeat across entities, and `==` tells them apart: hashing the key alone
    // halves the cost of the identity map's lookups.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(key)
    }

    // Identity maps hold up to millions of IDs whose keys come in runs: see KeyRunHashing.
    public func _rawHashValue(seed: Int) -> Int {
        let salt = Self.permanentSalt(of: entity)
        return KeyRunHashing.hashValue(of: key, salt: isTemporaryID ? ~salt : salt, seed: seed)
    }

    /// What the hash of a permanent ID mixes in besides its key: its entity's hierarchy.
    @inline(__always)
    static func permanentSalt(of entity: EntityDescription) -> UInt64 {
        UInt64(UInt(bitPattern: entity.hierarchyRootIdentifier ?? ObjectIdentifier(entity))) &* 0x9E37_79B9_7F4A_7C15
    }
}
