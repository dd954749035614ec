/// One entry of ``FetchRequest/propertiesToFetch``: a key path or a computed expression.
///
/// Core Data equivalent: the property names, `NSPropertyDescription`s and
/// `NSExpressionDescription`s of `propertiesToFetch`. A string literal is a key path.
public enum FetchedProperty: Sendable, Hashable, ExpressibleByStringLiteral {
    /// An attribute or to-one relationship, possibly through to-one relationships (`list.title`).
    case keyPath(String)
    /// An aggregate.
    case expression(ExpressionDescription)

    /// A key path written as a string literal: `"list.title"`.
    public init(stringLiteral value: String) {
        self = .keyPath(value)
    }

    /// The key of the value in a result dictionary.
    public var name: String {
        switch self {
        case .keyPath(let key): key
        case .expression(let description): description.name
        }
    }
}
