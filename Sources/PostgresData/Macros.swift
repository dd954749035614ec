/// Makes a `ManagedObject` subclass an entity: its stored properties become typed accessors
/// backed by the context's change tracking, and the class gets its ``EntityDescription``.
///
/// Core Data equivalent: an entity of the model editor with a generated class; SwiftData's
/// `@Model`.
///
/// ```swift
/// @Entity final class Item: ManagedObject {
///     var name: String
///     var createdAt: Date
///     var done = false
///     @Attribute(minValue: 0) var weight = 0
///     @Relationship(deleteRule: .nullify, inverse: \TodoList.items) var list: TodoList?
/// }
/// ```
///
/// Every stored `var` is persistent unless marked `@Transient`. Attribute types are the
/// ``PersistentAttributeValue`` types and any `Codable` type (stored as `jsonb`); a property
/// of a `ManagedObject` type is a to-one relationship, a `Set` of one a to-many relationship.
/// Options: `tableName`, `uniquenessConstraints` (property names), `indexes`, `isAbstract`.
/// A class inheriting from another `@Entity` class is its sub-entity (Core Data's
/// `subentities`): it has the parent's properties and its own, its rows live in the
/// parent's table, and fetches of the parent return its objects with their own class.
@attached(member, names: named(_$entity), prefixed(_$entity_), named(entity), named(_$keyPathNames), named(_$validatedKeys), named(_$validate))
@attached(memberAttribute)
public macro Entity(tableName: String? = nil, uniquenessConstraints: [[String]] = [], indexes: [[String]] = [], isAbstract: Bool = false) =
    #externalMacro(module: "PostgresDataMacros", type: "EntityMacro")

/// Options of an attribute of an `@Entity` class: constraints (checked by the context and
/// by `CHECK` clauses of the schema) — a range, a length, a pattern, a validation predicate
/// with `SELF` for the value (`validation: "SELF BEGINSWITH 'A'"`) — uniqueness, an index, a
/// column name, or a derivation (`derived: "items.@count"`, `derived: "price * quantity"`),
/// which makes the property read-only (see ``AttributeDescription/derivationExpression``).
///
/// Core Data equivalent: the attribute inspector; SwiftData's `@Attribute`.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(`_$`), prefixed(`_$i_`))
public macro Attribute(
    _ options: AttributeOption..., minValue: Double? = nil, maxValue: Double? = nil, minLength: Int? = nil,
    maxLength: Int? = nil, regularExpression: String? = nil, validation: String? = nil, derived: String? = nil,
    columnName: String? = nil
) = #externalMacro(module: "PostgresDataMacros", type: "PersistentPropertyMacro")

/// Options of a relationship of an `@Entity` class: delete rule, inverse, count limits, and
/// for a to-many relationship declared as an array (`var items: [Item]`), whether it keeps
/// its order (`ordered`, true unless set; see ``RelationshipDescription/isOrdered``).
/// One side of each pair names the inverse (`inverse: \TodoList.items`); the other side finds it.
///
/// Core Data equivalent: the relationship inspector; SwiftData's `@Relationship`.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(`_$`), prefixed(`_$i_`))
public macro Relationship(
    deleteRule: DeleteRule = .nullify, inverse: AnyKeyPath? = nil, minCount: Int = 0, maxCount: Int = 0, ordered: Bool = true
) = #externalMacro(module: "PostgresDataMacros", type: "PersistentPropertyMacro")

/// A fetched property of an `@Entity` class: `@Fetched("list == $FETCH_SOURCE AND done == NO") var openItems: [Item]`,
/// read-only, loaded on first use and cached until the object is refreshed (see
/// ``FetchedPropertyDescription``).
///
/// Core Data equivalent: a fetched property of the model editor (`NSFetchedPropertyDescription`).
@attached(accessor, names: named(get))
public macro Fetched(_ predicate: String, sortDescriptors: [FetchSortDescriptor] = []) =
    #externalMacro(module: "PostgresDataMacros", type: "FetchedMacro")

/// Makes a struct a composite attribute (``CompositeAttributeValue``): each stored property
/// (typed, of an attribute type) an element, a column of its own.
///
/// Core Data equivalent: `NSCompositeAttributeDescription`.
@attached(extension, conformances: CompositeAttributeValue, names: named(compositeElements), named(init(compositeValues:)), named(compositeValues))
public macro Composite() = #externalMacro(module: "PostgresDataMacros", type: "CompositeMacro")

/// Marks a stored property of an `@Entity` class as not persistent.
@attached(peer)
public macro Transient() = #externalMacro(module: "PostgresDataMacros", type: "TransientMacro")

/// Added by `@Entity` to each persistent property without options, with the property's
/// index in the entity's properties when the macro can tell it.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(`_$`), prefixed(`_$i_`))
public macro _PersistentProperty(index: Int? = nil) = #externalMacro(module: "PostgresDataMacros", type: "PersistentPropertyMacro")

/// Options of ``Attribute(_:minValue:maxValue:minLength:maxLength:regularExpression:validation:derived:columnName:)``.
public enum AttributeOption: Sendable, Hashable {
    /// No two objects may have the same value (`UNIQUE`).
    case unique
    /// The column gets an index.
    case indexed
    /// A deletion's history keeps the value (``AttributeDescription/preservesValueInHistoryOnDeletion``).
    case preservesValueInHistoryOnDeletion
}
