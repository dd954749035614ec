/// A predicate for fetch requests, written in Core Data's predicate format language.
///
/// Core Data equivalent: `NSPredicate(format:_:)`. Arguments are values, never SQL text:
/// `%@` takes any attribute value (or an object, an object ID, an array for `IN`), `%K` a
/// key path, `%d` an integer, `%f` a number; `$NAME` variables are bound later with
/// ``substituting(_:)``.
///
/// ```swift
/// let heavy = try FetchPredicate(format: "done == NO AND weight >= %@", 10)
/// let named = try FetchPredicate(format: "%K BEGINSWITH[cd] %@", "name", "é")
/// ```
public struct FetchPredicate: Sendable, Hashable, CustomStringConvertible {
    /// The parsed tree.
    public var node: PredicateNode
    /// The format string it came from, for messages.
    public var format: String

    /// Parses a format string; throws ``PredicateSyntaxError`` naming the column and what was expected.
    public init(format: String, _ arguments: Any?...) throws(PredicateSyntaxError) {
        try self.init(format: format, argumentArray: arguments)
    }

    /// Parses a format string with its arguments as an array.
    public init(format: String, argumentArray arguments: [Any?]) throws(PredicateSyntaxError) {
        var parser = try PredicateParser(format: format, arguments: arguments)
        self.node = try parser.parse()
        self.format = format
    }

    /// A predicate from a tree.
    public init(_ node: PredicateNode) {
        self.node = node
        self.format = "\(node)"
    }

    /// `TRUEPREDICATE`.
    public static let always = FetchPredicate(.constant(true))

    /// The predicate with `$NAME` variables replaced by values (Core Data's
    /// `withSubstitutionVariables(_:)`); a variable left without a value is an error.
    public func substituting(_ variables: [String: Any?]) throws(PredicateSyntaxError) -> FetchPredicate {
        var missing: String?
        let substituted = node.substituting { name in
            if let value = variables[name], let converted = PredicateParser.value(value) { return converted }
            if missing == nil { missing = name }
            return nil
        }
        if let missing {
            throw PredicateSyntaxError(message: "no value for the variable $\(missing)", column: 1, format: format)
        }
        return FetchPredicate(node: substituted, format: format)
    }

    private init(node: PredicateNode, format: String) {
        self.node = node
        self.format = format
    }

    public var description: String { format }
}

extension PredicateNode {
    /// The predicate with the key path `SELF` (any case) read as the key `key`: a property's
    /// validation predicate made a predicate of its object.
    func readingSelf(as key: String) -> PredicateNode {
        func mapped(_ value: PredicateValue) -> PredicateValue {
            switch value {
            case .keyPath(let path) where path.first?.uppercased() == "SELF": .keyPath([key] + path.dropFirst())
            case .list(let elements): .list(elements.map(mapped))
            case .arithmetic(let op, let left, let right): .arithmetic(op, mapped(left), mapped(right))
            case .negated(let inner): .negated(mapped(inner))
            case .cast(let inner, let type): .cast(mapped(inner), type)
            case .function(let inner, let method): .function(mapped(inner), method)
            default: value
            }
        }
        switch self {
        case .constant: return self
        case .not(let inner): return .not(inner.readingSelf(as: key))
        case .and(let terms): return .and(terms.map { $0.readingSelf(as: key) })
        case .or(let terms): return .or(terms.map { $0.readingSelf(as: key) })
        case .comparison(var comparison):
            comparison.left = mapped(comparison.left)
            comparison.right = mapped(comparison.right)
            return .comparison(comparison)
        }
    }

    func substituting(_ value: (String) -> PredicateValue?) -> PredicateNode {
        switch self {
        case .constant: self
        case .not(let inner): .not(inner.substituting(value))
        case .and(let terms): .and(terms.map { $0.substituting(value) })
        case .or(let terms): .or(terms.map { $0.substituting(value) })
        case .comparison(var comparison):
            {
                comparison.left = comparison.left.substituting(value)
                comparison.right = comparison.right.substituting(value)
                return .comparison(comparison)
            }()
        }
    }
}

extension PredicateValue {
    func substituting(_ value: (String) -> PredicateValue?) -> PredicateValue {
        switch self {
        case .variable(let name): value(name) ?? self
        case .list(let elements): .list(elements.map { $0.substituting(value) })
        case .arithmetic(let op, let left, let right): .arithmetic(op, left.substituting(value), right.substituting(value))
        case .negated(let inner): .negated(inner.substituting(value))
        case .cast(let inner, let type): .cast(inner.substituting(value), type)
        case .function(let inner, let method): .function(inner.substituting(value), method)
        case .subquery(let collection, let variable, let predicate):
            // The subquery's own variable stays.
            .subquery(collection: collection, variable: variable,
                      predicate: predicate.substituting { $0 == variable ? nil : value($0) })
        default: self
        }
    }
}
