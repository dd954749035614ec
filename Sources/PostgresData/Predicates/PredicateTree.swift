/// A predicate as PostgresData understands it: the tree a format string (or a Foundation
/// `#Predicate`) parses into, which compiles to SQL with bind parameters and evaluates in
/// memory against objects.
///
/// Core Data equivalent: `NSPredicate` and its subclasses `NSCompoundPredicate` and
/// `NSComparisonPredicate`.
public indirect enum PredicateNode: Sendable, Hashable {
    /// `TRUEPREDICATE` / `FALSEPREDICATE`.
    case constant(Bool)
    /// `NOT p`.
    case not(PredicateNode)
    /// `p AND q AND …`.
    case and([PredicateNode])
    /// `p OR q OR …`.
    case or([PredicateNode])
    /// `left op right`, optionally quantified over a to-many key path (`ANY tags.label == 'x'`).
    case comparison(PredicateComparison)
}

/// One comparison of a predicate.
public struct PredicateComparison: Sendable, Hashable {
    /// How a to-many left side is quantified.
    public enum Quantifier: String, Sendable, Hashable {
        case direct, any, all, none
    }

    /// Comparison operators of the predicate language.
    public enum Operator: String, Sendable, Hashable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case between = "BETWEEN"
        case `in` = "IN"
        case contains = "CONTAINS"
        case beginsWith = "BEGINSWITH"
        case endsWith = "ENDSWITH"
        case like = "LIKE"
        case matches = "MATCHES"
    }

    /// `ANY`, `ALL`, `NONE`, or none of them.
    public var quantifier: Quantifier
    /// The left side (usually a key path).
    public var left: PredicateValue
    /// The operator.
    public var op: Operator
    /// `[c]`: case-insensitive.
    public var caseInsensitive: Bool
    /// `[d]`: diacritic-insensitive.
    public var diacriticInsensitive: Bool
    /// The right side (usually a constant: a bind parameter).
    public var right: PredicateValue

    /// A comparison.
    public init(quantifier: Quantifier = .direct, left: PredicateValue, op: Operator, caseInsensitive: Bool = false,
                diacriticInsensitive: Bool = false, right: PredicateValue) {
        self.quantifier = quantifier
        self.left = left
        self.op = op
        self.caseInsensitive = caseInsensitive
        self.diacriticInsensitive = diacriticInsensitive
        self.right = right
    }
}

/// A value in a predicate: a key path, a constant, a list, an aggregate, arithmetic.
public indirect enum PredicateValue: Sendable, Hashable {
    /// A key path from the fetched entity (`list.title`), or from a `SUBQUERY` variable
    /// (`$x.label`: first component `$x`).
    case keyPath([String])
    /// A constant (a literal or a `%@`, `%d`, `%f` argument): always a bind parameter.
    case constant(AttributeValue)
    /// `{a, b, c}`, or an array argument.
    case list([PredicateValue])
    /// `$NAME`, replaced by ``FetchPredicate/substituting(_:)``.
    case variable(String)
    /// `items.@count`.
    case count([String])
    /// `items.@sum.weight` (and `@avg`, `@min`, `@max`).
    case aggregate(Aggregate, collection: [String], key: [String])
    /// `a + b`, `a - b`, `a * b`, `a / b`.
    case arithmetic(Arithmetic, PredicateValue, PredicateValue)
    /// `-a`.
    case negated(PredicateValue)
    /// `SUBQUERY(collection, $x, predicate)`: the related objects matching the predicate;
    /// compared through `.@count`.
    case subquery(collection: [String], variable: String, predicate: PredicateNode)
    /// `now()`: the current time; in SQL the start of the transaction (the server's clock).
    case now
    /// `CAST(value, 'NSDate')` (and `'NSNumber'`, `'NSString'`, `'NSDecimalNumber'`): a value
    /// read as another type, with Core Data's meaning — a number cast to a date counts
    /// seconds from 2001-01-01, a date cast to a number gives them back.
    case cast(PredicateValue, AttributeType)
    /// `FUNCTION(value, 'uppercaseString')`: a method Core Data would call on the value, for
    /// the methods with a meaning in SQL (``Method``).
    case function(PredicateValue, Method)

    /// The methods `FUNCTION(value, 'method')` may name: those of `NSString` and `NSNumber`
    /// that PostgreSQL computes the same way.
    public enum Method: String, Sendable, Hashable, CaseIterable {
        /// `upper(…)` of a string.
        case uppercaseString
        /// `lower(…)` of a string.
        case lowercaseString
        /// A string's length in UTF-16 code units, as `NSString.length` counts.
        case length
        /// A number or date as a string (``cast(_:_:)`` to `NSString`).
        case stringValue
        /// A number (or numeric string) as a double (`CAST` to `NSNumber`).
        case doubleValue
        /// A number truncated toward zero (`intValue`, `integerValue`, `longLongValue`).
        case integerValue
        /// A number's truth: not zero.
        case boolValue

        /// The method a selector names (`intValue` and its kin read as ``integerValue``).
        init?(selector: String) {
            switch selector {
            case "intValue", "longValue", "longLongValue", "integerValue", "int64Value": self = .integerValue
            case "floatValue", "doubleValue": self = .doubleValue
            default: self.init(rawValue: selector)
            }
        }
    }

    /// Key-path aggregates.
    public enum Aggregate: String, Sendable, Hashable {
        case sum, avg, min, max
    }

    /// Arithmetic operators (`**` raises to a power, as `NSExpression`'s `raise:toPower:`).
    public enum Arithmetic: String, Sendable, Hashable {
        case add = "+", subtract = "-", multiply = "*", divide = "/", power = "**"
    }
}

extension PredicateComparison {
    /// The comparison applied to each related object of a to-many left side (`ANY tags.label
    /// == 'x'` → `label == 'x'`; `ANY tags == %@` and `tags CONTAINS %@` → `id == %@`). SQL
    /// and in-memory evaluation quantify the same rewritten comparison.
    func perElement(rest: [String]) -> PredicateComparison {
        var inner = self
        inner.quantifier = .direct
        if rest.isEmpty {
            inner.left = .keyPath(["id"])
            if op == .contains { inner.op = .equal }
        } else {
            inner.left = .keyPath(rest)
        }
        return inner
    }

    /// `%@ IN tags` (membership in a to-many relationship) as a test on each related object.
    func membership(rest: [String]) -> PredicateComparison {
        PredicateComparison(left: .keyPath(rest.isEmpty ? ["id"] : rest), op: .equal, caseInsensitive: caseInsensitive,
                            diacriticInsensitive: diacriticInsensitive, right: left)
    }
}

extension PredicateValue.Method {
    /// What the method's receiver must be, for error messages.
    var receiver: String {
        switch self {
        case .uppercaseString, .lowercaseString, .length: "a string"
        case .stringValue: "a number, date or string"
        case .doubleValue: "a number or a numeric string"
        case .integerValue, .boolValue: "a number or a Boolean"
        }
    }

    /// True when a value of `type` can receive the method.
    func accepts(_ type: AttributeType) -> Bool {
        switch self {
        case .uppercaseString, .lowercaseString, .length: type == .string
        case .stringValue: type != .codable && type != .binaryData
        case .doubleValue: type.isNumeric || type == .string || type == .date
        case .integerValue, .boolValue: type.isNumeric || type == .boolean
        }
    }
}
