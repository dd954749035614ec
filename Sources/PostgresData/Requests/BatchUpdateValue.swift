import Foundation
import PostgresClient

/// The new value of one key in a batch update: a constant (checked against the model before
/// anything is sent), an expression over the row (`weight + 1`, `name + ' (old)'`,
/// `now()`, another key), `nil`, or an object ID for a to-one relationship.
///
/// Core Data equivalent: the constants and `NSExpression`s of `propertiesToUpdate`.
public struct BatchUpdateValue: Sendable, Hashable, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral {
    let value: PredicateValue

    init(value: PredicateValue) {
        self.value = value
    }

    /// A constant: any attribute value (`Int`, `String`, `Date`, …), a ``ManagedObjectID``, or nil.
    public init(_ constant: Any?) throws {
        guard let converted = PredicateParser.value(constant), case .constant = converted else {
            throw PostgresDataError.invalidRequest("a batch update cannot store a value of type \(type(of: constant as Any))")
        }
        self.value = converted
    }

    /// An expression in the predicate language's value syntax, with `%@`/`%K` arguments:
    /// `.expression("weight + %@", 1)`, `.expression("now()")`, `.expression("name + ' (old)'")`.
    public static func expression(_ format: String, _ arguments: Any?...) throws(PredicateSyntaxError) -> BatchUpdateValue {
        var parser = try PredicateParser(format: format, arguments: arguments)
        return BatchUpdateValue(value: try parser.parseExpression())
    }

    /// The transaction's time on the server (`now()`).
    public static let now = BatchUpdateValue(value: .now)

    public init(integerLiteral value: Int) { self.value = .constant(.integer(Int64(value))) }
    public init(floatLiteral value: Double) { self.value = .constant(.double(value)) }
    /// A constant string (use ``expression(_:_:)`` for an expression).
    public init(stringLiteral value: String) { self.value = .constant(.string(value)) }
    public init(booleanLiteral value: Bool) { self.value = .constant(.boolean(value)) }
    public init(nilLiteral: ()) { self.value = .constant(.null) }
}
