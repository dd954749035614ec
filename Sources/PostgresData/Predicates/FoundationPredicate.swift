import Foundation

/// Translates a Foundation `#Predicate` into PostgresData's predicate tree, so it compiles to
/// the same parameterised SQL and evaluates the same way in memory as a format string.
///
/// Supported: `==`, `!=`, `<`, `<=`, `>`, `>=`, `&&`, `||`, `!`, `+ - * /`, unary minus,
/// `nil`, constants and captured values, key paths through to-one relationships (`$0.list?.title`,
/// `$0.list!.title`), `starts(with:)` (BEGINSWITH), `contains(_:)` on strings (CONTAINS), on
/// arrays of constants (IN) and on to-many relationships (membership), `contains(where:)`
/// (ANY, as a SUBQUERY), `allSatisfy` (ALL), and `.count` / `.isEmpty` of to-many
/// relationships. Anything else is a thrown error naming the construct.
struct FoundationPredicateTranslator {
    /// What a `#Predicate` variable stands for: a key-path prefix (empty for the root) or a
    /// SUBQUERY variable.
    fileprivate var variables: [PredicateExpressions.VariableID: [String]] = [:]
    fileprivate var subqueries = 0

    /// A translated expression: a condition or a value.
    fileprivate enum Translated {
        case node(PredicateNode)
        case value(PredicateValue)
    }

    fileprivate mutating func translate(_ expression: Any) throws -> Translated {
        guard let translatable = expression as? any FoundationTranslatable else {
            throw Self.unsupported(expression)
        }
        return try translatable.translate(&self)
    }

    fileprivate mutating func node(_ expression: Any) throws -> PredicateNode {
        switch try translate(expression) {
        case .node(let node): return node
        case .value(.constant(.boolean(let value))): return .constant(value)
        case .value(let value):
            // A Bool key path used as a condition: `$0.done`.
            return .comparison(PredicateComparison(left: value, op: .equal, right: .constant(.boolean(true))))
        }
    }

    fileprivate mutating func value(_ expression: Any) throws -> PredicateValue {
        switch try translate(expression) {
        case .value(let value): return value
        case .node:
            throw PostgresDataError.invalidRequest("#Predicate: a condition is used as a value (\(Self.construct(of: expression))); compare values instead")
        }
    }

    fileprivate mutating func keyPath(_ expression: Any, for use: String) throws -> [String] {
        guard case .keyPath(let path) = try value(expression) else {
            throw PostgresDataError.invalidRequest("#Predicate: \(use) needs a property of the object, not \(Self.construct(of: expression))")
        }
        return path
    }

    /// The name of a Foundation expression type without its generic arguments: `NilCoalesce`.
    static func construct(of expression: Any) -> String {
        let name = String(describing: type(of: expression))
        return String(name.prefix { $0 != "<" })
    }

    static func unsupported(_ expression: Any) -> PostgresDataError {
        .invalidRequest("#Predicate: \(construct(of: expression)) cannot be translated to SQL; write this part as a format string (FetchPredicate(format:))")
    }

    fileprivate static func comparison(_ left: PredicateValue, _ op: PredicateComparison.Operator, _ right: PredicateValue) -> Translated {
        .node(.comparison(PredicateComparison(left: left, op: op, right: right)))
    }

    /// A Swift value as a predicate constant (optionals unwrapped, arrays as lists).
    static func constant(_ value: Any) throws -> PredicateValue {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return .constant(.null) }
            return try constant(wrapped)
        }
        guard let converted = PredicateParser.value(value) else {
            throw PostgresDataError.invalidRequest("#Predicate: a value of type \(type(of: value)) cannot be compared with a property")
        }
        return converted
    }
}

/// A Foundation predicate expression PostgresData can translate.
private protocol FoundationTranslatable {
    func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated
}

extension PredicateExpressions.Variable: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        guard let path = translator.variables[key] else {
            throw PostgresDataError.invalidRequest("#Predicate: a variable of type \(Output.self) is not bound")
        }
        return .value(.keyPath(path.isEmpty ? ["self"] : path))
    }
}

extension PredicateExpressions.KeyPath: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        let base = try translator.keyPath(root, for: "a key path")
        let prefix = base == ["self"] ? [] : base
        switch kind {
        case .collectionCount:
            return .value(.count(prefix))
        case .collectionIsEmpty:
            return FoundationPredicateTranslator.comparison(.count(prefix), .equal, .constant(.integer(0)))
        default:
            break
        }
        guard let objectType = Root.Output.self as? ManagedObject.Type else {
            throw PostgresDataError.invalidRequest("#Predicate: \(keyPath) is a key path of \(Root.Output.self), which is not a managed object")
        }
        guard let name = objectType._$keyPathNames[keyPath] else {
            throw PostgresDataError.invalidRequest("#Predicate: \(keyPath) is not a persistent property of \(objectType) (declare the class with @Entity)")
        }
        return .value(.keyPath(prefix + [name]))
    }
}

extension PredicateExpressions.Value: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        .value(try FoundationPredicateTranslator.constant(value))
    }
}

extension PredicateExpressions.NilLiteral: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        .value(.constant(.null))
    }
}

extension PredicateExpressions.Equal: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        FoundationPredicateTranslator.comparison(try translator.value(lhs), .equal, try translator.value(rhs))
    }
}

extension PredicateExpressions.NotEqual: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        FoundationPredicateTranslator.comparison(try translator.value(lhs), .notEqual, try translator.value(rhs))
    }
}

extension PredicateExpressions.Comparison: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        let operator_: PredicateComparison.Operator = switch op {
        case .lessThan: .less
        case .lessThanOrEqual: .lessOrEqual
        case .greaterThan: .greater
        case .greaterThanOrEqual: .greaterOrEqual
        }
        return FoundationPredicateTranslator.comparison(try translator.value(lhs), operator_, try translator.value(rhs))
    }
}

extension PredicateExpressions.Conjunction: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        .node(.and([try translator.node(lhs), try translator.node(rhs)]))
    }
}

extension PredicateExpressions.Disjunction: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        .node(.or([try translator.node(lhs), try translator.node(rhs)]))
    }
}

extension PredicateExpressions.Negation: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        .node(.not(try translator.node(wrapped)))
    }
}

extension PredicateExpressions.Arithmetic: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        let arithmetic: PredicateValue.Arithmetic = switch op {
        case .add: .add
        case .subtract: .subtract
        case .multiply: .multiply
        }
        return .value(.arithmetic(arithmetic, try translator.value(lhs), try translator.value(rhs)))
    }
}

extension PredicateExpressions.IntDivision: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        .value(.arithmetic(.divide, try translator.value(lhs), try translator.value(rhs)))
    }
}

extension PredicateExpressions.FloatDivision: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        .value(.arithmetic(.divide, try translator.value(lhs), try translator.value(rhs)))
    }
}

extension PredicateExpressions.UnaryMinus: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        .value(.negated(try translator.value(wrapped)))
    }
}

extension PredicateExpressions.OptionalFlatMap: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        // `$0.list?.title`: the closure's variable stands for the to-one key path.
        translator.variables[variable.key] = try translator.keyPath(wrapped, for: "?.")
        return try translator.translate(transform)
    }
}

extension PredicateExpressions.ForcedUnwrap: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        try translator.translate(inner)
    }
}

extension PredicateExpressions.SequenceStartsWith: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        FoundationPredicateTranslator.comparison(try translator.value(base), .beginsWith, try translator.value(prefix))
    }
}

extension PredicateExpressions.CollectionContainsCollection: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        FoundationPredicateTranslator.comparison(try translator.value(base), .contains, try translator.value(other))
    }
}

extension PredicateExpressions.SequenceContains: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        // `[1, 2].contains($0.weight)` is IN a list; `$0.tags.contains(tag)` membership.
        FoundationPredicateTranslator.comparison(try translator.value(element), .in, try translator.value(sequence))
    }
}

extension PredicateExpressions.SequenceContainsWhere: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        let (collection, name, test) = try translator.subquery(sequence, variable.key, test)
        return FoundationPredicateTranslator.comparison(.subquery(collection: collection, variable: name, predicate: test),
                                                        .greater, .constant(.integer(0)))
    }
}

extension PredicateExpressions.SequenceAllSatisfy: FoundationTranslatable {
    fileprivate func translate(_ translator: inout FoundationPredicateTranslator) throws -> FoundationPredicateTranslator.Translated {
        let (collection, name, test) = try translator.subquery(sequence, variable.key, test)
        return FoundationPredicateTranslator.comparison(.subquery(collection: collection, variable: name, predicate: .not(test)),
                                                        .equal, .constant(.integer(0)))
    }
}

extension FoundationPredicateTranslator {
    /// `collection.contains { test }`: a SUBQUERY over the to-many key path with a fresh variable.
    fileprivate mutating func subquery(_ sequence: Any, _ variable: PredicateExpressions.VariableID, _ test: Any) throws -> ([String], String, PredicateNode) {
        let collection = try keyPath(sequence, for: "contains(where:) and allSatisfy")
        subqueries += 1
        let name = "x\(subqueries)"
        variables[variable] = ["$" + name]
        return (collection, name, try node(test))
    }
}

extension FetchPredicate {
    /// A predicate from a Foundation `#Predicate`, translated to the same tree a format
    /// string parses into; throws an error naming any construct it cannot translate.
    ///
    /// ```swift
    /// let heavy = try FetchPredicate(#Predicate<Item> { $0.weight >= 10 && $0.list?.title == "Home" })
    /// ```
    public init<Root: ManagedObject>(_ predicate: Predicate<Root>) throws {
        var translator = FoundationPredicateTranslator()
        translator.variables[predicate.variable.key] = []
        self.init(try translator.node(predicate.expression))
    }
}

extension FetchSortDescriptor {
    /// A sort descriptor from a Foundation `SortDescriptor` on a persistent property
    /// (strings compare by code point; say `caseInsensitive` here for case-insensitive order).
    public init<Root: ManagedObject>(_ descriptor: SortDescriptor<Root>) throws {
        guard let keyPath = descriptor.keyPath, let name = Root._$keyPathNames[keyPath] else {
            throw PostgresDataError.invalidRequest("SortDescriptor: \(descriptor.keyPath.map { "\($0)" } ?? "a comparator") is not a persistent property of \(Root.self); use FetchSortDescriptor(key:) for key paths through relationships")
        }
        self.init(key: name, ascending: descriptor.order == .forward)
    }
}

extension FetchRequest where Result: ManagedObject {
    /// A request with a Foundation `#Predicate` and `SortDescriptor`s.
    ///
    /// ```swift
    /// let request = try FetchRequest<Item>(predicate: #Predicate { $0.done == false }, sortBy: [SortDescriptor(\.name)])
    /// ```
    public init(predicate: Predicate<Result>, sortBy sortDescriptors: [SortDescriptor<Result>] = []) throws {
        self.init(predicate: try FetchPredicate(predicate), sortDescriptors: try sortDescriptors.map(FetchSortDescriptor.init))
    }
}
