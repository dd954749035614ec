/// A property of an entity: an attribute or a relationship.
///
/// Core Data equivalent: `NSPropertyDescription` and its subclasses.
public enum PropertyDescription: Sendable, Hashable {
    /// A stored value.
    case attribute(AttributeDescription)
    /// A link to objects of another (or the same) entity.
    case relationship(RelationshipDescription)

    /// The property name.
    public var name: String {
        switch self {
        case .attribute(let attribute): attribute.name
        case .relationship(let relationship): relationship.name
        }
    }

    var attribute: AttributeDescription? {
        if case .attribute(let attribute) = self { return attribute }
        return nil
    }

    var relationship: RelationshipDescription? {
        if case .relationship(let relationship) = self { return relationship }
        return nil
    }
}
