/// How a save resolves objects whose rows changed in the database since the context read
/// them (another context, process or batch request wrote them).
///
/// Core Data equivalent: `NSMergePolicy`. Conflicts are found by optimistic locking: every
/// `UPDATE` and `DELETE` of a save checks the row version (`xmin`) the context last saw.
///
/// The policy also resolves *uniqueness* conflicts (Core Data's `NSConstraintConflict`):
/// a new object whose unique key (an attribute marked unique, or the entity's first
/// uniqueness constraint) a row already holds. With `error` the save throws
/// ``PostgresDataError/constraintConflict(_:)`` naming both sides. With the object-trump
/// policies (`mergeByPropertyObjectTrump`, `overwrite`) the row takes the object's values;
/// with the store-trump ones (`mergeByPropertyStoreTrump`, `rollback`) the object takes the
/// row's values and the row is left alone. Either way the object takes the row's ID and
/// everything of the save that pointed at the object points at the row, in the save's own
/// round trip (`INSERT … ON CONFLICT … RETURNING`). An object the context held for that
/// row before leaves the context. Objects of one save that share a key always throw.
public enum MergePolicy: Sendable, Hashable {
    /// The save fails with ``PostgresDataError/mergeConflict(_:)`` listing each object with
    /// its cached, current and database values; nothing is written. The default.
    case error
    /// Property by property: where the database changed a property, its value wins; the
    /// object's other changes are written.
    case mergeByPropertyStoreTrump
    /// Property by property: the object's changed properties win; properties only the
    /// database changed keep the database's values.
    case mergeByPropertyObjectTrump
    /// The object's whole state is written over the row, whatever changed there.
    case overwrite
    /// The object's changes are discarded for the database's state.
    case rollback
}

extension MergePolicy {
    /// How this policy resolves a new object whose unique key a row holds; nil: it does not.
    var uniquenessResolution: SavePlan.UniquenessResolution? {
        switch self {
        case .error: nil
        case .mergeByPropertyObjectTrump, .overwrite: .objectTrump
        case .mergeByPropertyStoreTrump, .rollback: .storeTrump
        }
    }

    /// Resolves one updated object against the row as it is now (`current` nil: deleted).
    /// Returns false when the policy cannot resolve it.
    func resolve(_ object: ManagedObject, current: RowSnapshot?, in context: ManagedObjectContext) -> Bool {
        guard let current else {
            if object.isDeletedStorage && self != .error {
                context.forgetDeleted(object)  // Deleted already: the deletion is done.
                return true
            }
            switch self {
            case .mergeByPropertyStoreTrump, .rollback:
                context.forgetDeleted(object)
                return true
            case .error, .mergeByPropertyObjectTrump, .overwrite:
                // The object's values cannot be written to a row that no longer exists.
                return false
            }
        }
        let cached = object.snapshot?.values ?? current.values
        var values = object.values
        switch self {
        case .error:
            return false
        case .overwrite:
            break
        case .mergeByPropertyObjectTrump:
            for index in object.entity.columnIndices where !object.changedProperties.contains(index) {
                values[index] = current.values[index]
            }
        case .mergeByPropertyStoreTrump:
            for index in object.entity.columnIndices where current.values[index] != cached[index] || !object.changedProperties.contains(index) {
                values[index] = current.values[index]
            }
        case .rollback:
            values = current.values
            object.relationshipSets = [:]
        }
        object.values = values
        object.snapshot = current
        object.changedProperties.removeAll()
        for index in object.entity.columnIndices where values[index] != current.values[index] {
            object.changedProperties.insert(index)
        }
        context.didChange(object)
        object.awake(fromSnapshotEvents: .mergePolicy)
        return true
    }
}
