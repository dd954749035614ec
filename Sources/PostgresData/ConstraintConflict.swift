/// A save found objects whose unique key another object or an existing row already holds.
///
/// Core Data equivalent: `NSConstraintConflict`. With the merge policy ``MergePolicy/error``
/// a save throws ``PostgresDataError/constraintConflict(_:)`` listing one conflict per key
/// value: the objects of the save that hold it and, when the database holds it, that row.
/// Other merge policies resolve conflicts with existing rows in the save itself (see
/// ``MergePolicy``); conflicts among the objects of one save always throw.
public struct ConstraintConflict: Sendable, CustomStringConvertible {
    /// The entity of the objects.
    public var entityName: String
    /// The property names of the unique key (Core Data's `constraint`).
    public var constraint: [String]
    /// The constraint's name in the database (`tag_name_key`).
    public var constraintName: String
    /// The key's values the objects share, by property name.
    public var constraintValues: [String: AttributeValue]
    /// The objects of the save holding these values (Core Data's `conflictingObjects`).
    public var conflictingObjectIDs: [ManagedObjectID]
    /// The row holding these values; nil when the conflict is among objects of the save
    /// (Core Data's `databaseObject`).
    public var databaseObjectID: ManagedObjectID?
    /// That row's values, by property name (Core Data's `databaseSnapshot`).
    public var databaseValues: [String: AttributeValue]?

    public var description: String {
        let values = constraint.map { key in "\(key) = \(constraintValues[key].flatMap(\.anyValue).map { "\($0)" } ?? "nil")" }
        let objects = conflictingObjectIDs.map(\.description).joined(separator: ", ")
        let holder = databaseObjectID.map { "the row \($0) holds it" } ?? "the objects of this save share it"
        return "\(entityName) (\(values.joined(separator: ", "))) must be unique (constraint \(constraintName)): \(holder); new or changed: \(objects)"
    }
}
