/// A Swift struct stored as a composite attribute: each of its stored properties an element
/// of the attribute, a column of its own (`address_city`), usable in predicates and sorts
/// (`address.city == %@`), unlike a `Codable` value stored as one opaque `jsonb`.
///
/// Core Data equivalent: `NSCompositeAttributeDescription`. Mark the struct `@Composite`
/// (its stored properties typed, its memberwise initializer available) and use it as the
/// type of an `@Entity` property:
///
/// ```swift
/// @Composite struct Address {
///     var street: String = ""
///     var city: String = ""
///     var postcode: String?
/// }
///
/// @Entity final class Customer: ManagedObject {
///     var name: String = ""
///     var address = Address()
/// }
/// ```
public protocol CompositeAttributeValue {
    /// The elements, in order: an attribute per stored property.
    static var compositeElements: [AttributeDescription] { get }
    /// Makes a value from its elements' stored values, in ``compositeElements`` order.
    init(compositeValues: [AttributeValue])
    /// The elements' stored values, in ``compositeElements`` order.
    var compositeValues: [AttributeValue] { get }
}
