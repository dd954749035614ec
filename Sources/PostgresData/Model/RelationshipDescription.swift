/// A relationship of an entity to another: to-one or to-many, with its inverse and delete rule.
///
/// Core Data equivalent: `NSRelationshipDescription`. A relationship declared without an
/// inverse (which Core Data allows, with a warning) gets an implicit one on its destination
/// (``isImplicitInverse``): a to-one relationship stays a foreign key, whose rows are
/// nullified (or, when required, protected) when their destination is deleted; a to-many
/// relationship becomes a join table.
/// A to-one relationship whose inverse is to-many is a foreign-key column of this entity's
/// table (`list_id`); a to-many relationship whose inverse is to-many is a join table.
public struct RelationshipDescription: Sendable, Hashable {
    /// The property name (`list`, `items`).
    public var name: String
    /// The entity at the other end.
    public var destinationEntityName: String
    /// The relationship of the destination that points back.
    public var inverseName: String
    /// True for a to-many relationship (a `Set` of objects).
    public var isToMany: Bool
    /// What deleting the source object does to the destination objects.
    public var deleteRule: DeleteRule
    /// True when a to-one relationship may be nil; false makes its column `NOT NULL`.
    public var isOptional: Bool
    /// For a to-many relationship: the fewest destination objects allowed (0 for no limit).
    public var minCount: Int
    /// For a to-many relationship: the most destination objects allowed (0 for no limit).
    public var maxCount: Int
    /// For a to-many relationship: the destination objects keep the order they are given in.
    /// The order is a `double precision` position column (`items_position`) of the rows that
    /// hold the relationship (the destination's, or the join table's); a save writes the
    /// positions of only the objects that moved, as far as gaps allow.
    ///
    /// Core Data equivalent: `isOrdered` (an `NSOrderedSet`); in an `@Entity` class, a
    /// to-many relationship declared as an array (`var items: [Item]`).
    public var isOrdered: Bool
    /// True for the inverse the model adds to a relationship declared without one: never
    /// set by the app, it keeps the database consistent (a foreign key, or a join table) and
    /// changes no object of its entity.
    public internal(set) var isImplicitInverse = false

    /// Describes a relationship.
    public init(name: String, destination: String, inverse: String, toMany: Bool = false,
                deleteRule: DeleteRule = .nullify, isOptional: Bool = true, minCount: Int = 0, maxCount: Int = 0,
                isOrdered: Bool = false) {
        self.isOrdered = isOrdered
        self.name = name
        self.destinationEntityName = destination
        self.inverseName = inverse
        self.isToMany = toMany
        self.deleteRule = deleteRule
        self.isOptional = isOptional
        self.minCount = minCount
        self.maxCount = maxCount
    }
}

/// How a relationship is stored, decided when the model is built.
enum RelationshipStorage: Sendable, Hashable {
    /// A foreign-key column of the source table; the value sits in the object's column slot.
    case foreignKey(column: String)
    /// The destination table's foreign key points back (the to-many side of one-to-many, or
    /// the non-owning side of one-to-one); loaded on demand.
    case inverseForeignKey
    /// Rows of a join table (many-to-many).
    case joinTable(JoinTable)
}

/// The join table of a many-to-many relationship pair.
struct JoinTable: Sendable, Hashable {
    var name: String
    /// The column holding the source object's key (as seen from the relationship that owns this value).
    var sourceColumn: String
    /// The column holding the destination object's key.
    var destinationColumn: String
}
