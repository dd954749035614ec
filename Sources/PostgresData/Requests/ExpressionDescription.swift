/// A computed column of a dictionary fetch: an aggregate over a key path, named in the
/// resulting dictionaries.
///
/// Core Data equivalent: `NSExpressionDescription` with an `NSExpression(forFunction:arguments:)`.
///
/// ```swift
/// var request = FetchRequest<FetchedDictionary>(entityName: "Item")
/// request.propertiesToFetch = ["done", .expression(.sum("weight", as: "totalWeight")), .expression(.count("id", as: "items"))]
/// request.propertiesToGroupBy = ["done"]
/// ```
public struct ExpressionDescription: Sendable, Hashable {
    /// The aggregate functions of dictionary fetches (`count:`, `sum:`, `average:`, `min:`,
    /// `max:` in Core Data).
    public enum Function: String, Sendable, Hashable {
        /// The number of non-NULL values (`count(…)`).
        case count
        /// The total (`sum(…)`, 0 for no rows).
        case sum
        /// The mean as a `Double` (`avg(…)`).
        case average
        /// The smallest value.
        case min
        /// The largest value.
        case max
    }

    /// The key in each result dictionary.
    public var name: String
    /// The function applied.
    public var function: Function
    /// The key path it is applied to (through to-one relationships; `id` counts rows).
    public var keyPath: String
    /// The type of the result, when it should differ from the natural one (a cast).
    public var expressionResultType: AttributeType?

    /// `function(keyPath)` named `name`.
    public init(name: String, function: Function, keyPath: String, expressionResultType: AttributeType? = nil) {
        self.name = name
        self.function = function
        self.keyPath = keyPath
        self.expressionResultType = expressionResultType
    }

    /// The number of non-NULL values of `keyPath` (of rows, for `id`).
    public static func count(_ keyPath: String, as name: String) -> ExpressionDescription {
        ExpressionDescription(name: name, function: .count, keyPath: keyPath)
    }

    /// The sum of `keyPath` (0 for no rows).
    public static func sum(_ keyPath: String, as name: String) -> ExpressionDescription {
        ExpressionDescription(name: name, function: .sum, keyPath: keyPath)
    }

    /// The mean of `keyPath`, as a `Double`.
    public static func average(_ keyPath: String, as name: String) -> ExpressionDescription {
        ExpressionDescription(name: name, function: .average, keyPath: keyPath)
    }

    /// The smallest value of `keyPath`.
    public static func min(_ keyPath: String, as name: String) -> ExpressionDescription {
        ExpressionDescription(name: name, function: .min, keyPath: keyPath)
    }

    /// The largest value of `keyPath`.
    public static func max(_ keyPath: String, as name: String) -> ExpressionDescription {
        ExpressionDescription(name: name, function: .max, keyPath: keyPath)
    }
}
