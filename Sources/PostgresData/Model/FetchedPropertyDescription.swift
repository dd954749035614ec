/// A property whose value is a stored fetch: the objects of another entity that match a
/// predicate in which `$FETCH_SOURCE` stands for the object that has the property.
///
/// Core Data equivalent: `NSFetchedPropertyDescription`. In an `@Entity` class:
///
/// ```swift
/// @Fetched("list == $FETCH_SOURCE AND done == NO", sortDescriptors: [FetchSortDescriptor(key: "createdAt")])
/// var openItems: [Item]
/// ```
///
/// The first read of the property on an object loads it for every registered object of the
/// entity that lacks it, in one query (`unnest` of their keys joined to the destination's
/// rows); the result stays cached until the object is refreshed (``ManagedObjectContext/refresh(_:mergeChanges:)``,
/// ``ManagedObjectContext/reset()``), as in Core Data, so it does not follow later saves.
/// `$FETCH_SOURCE.key` reads a value of the source object. A new object, without a row yet,
/// has no matches.
public struct FetchedPropertyDescription: Sendable, Hashable {
    /// The property name (`openItems`).
    public var name: String
    /// The entity of the objects fetched.
    public var destinationEntityName: String
    /// The predicate, in the predicate language, with `$FETCH_SOURCE` for the owner.
    public var predicateFormat: String
    /// The order of the objects.
    public var sortDescriptors: [FetchSortDescriptor]

    /// Describes a fetched property.
    public init(name: String, destinationEntityName: String, predicateFormat: String, sortDescriptors: [FetchSortDescriptor] = []) {
        self.name = name
        self.destinationEntityName = destinationEntityName
        self.predicateFormat = predicateFormat
        self.sortDescriptors = sortDescriptors
    }
}
