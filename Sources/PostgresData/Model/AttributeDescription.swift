import Foundation
import PostgresClient

/// A stored property of an entity: its name, type, optionality, default and constraints.
///
/// Core Data equivalent: `NSAttributeDescription`. Constraints are checked by the context
/// before a save (``ManagedObject/validateForUpdate()``) *and* become `NOT NULL` and `CHECK`
/// clauses of the column, so a batch request cannot write what a save would reject.
///
/// ```swift
/// AttributeDescription(name: "weight", type: .integer32, defaultValue: 0, minValue: 0, maxValue: 1000)
/// ```
public struct AttributeDescription: Sendable, Hashable {
    /// The property name (`createdAt`).
    public var name: String
    /// The type of the values.
    public var attributeType: AttributeType
    /// True when the attribute may be nil (a nullable column).
    public var isOptional: Bool
    /// The value a newly inserted object starts with (`.null` for none).
    public var defaultValue: AttributeValue
    /// The smallest allowed value of a numeric attribute, or earliest date (seconds since 1970).
    public var minValue: Double?
    /// The largest allowed value of a numeric attribute, or latest date (seconds since 1970).
    public var maxValue: Double?
    /// The fewest characters (strings) or bytes (data) allowed.
    public var minLength: Int?
    /// The most characters (strings) or bytes (data) allowed.
    public var maxLength: Int?
    /// A regular expression the whole string must match (Core Data's `MATCHES` semantics).
    /// Checked by `NSRegularExpression` in the context and by PostgreSQL's `~` in the schema:
    /// keep to the syntax both share.
    public var regularExpression: String?
    /// True when the column gets an index of its own.
    public var isIndexed: Bool
    /// True when no two objects may have the same value (a `UNIQUE` constraint).
    public var isUnique: Bool
    /// The column name; snake_case of ``name`` unless set.
    public var columnName: String
    /// Predicates every non-nil value must satisfy, in the predicate language, with `SELF`
    /// for the value (`"SELF BEGINSWITH 'A'"`, `"SELF BETWEEN {1, 9}"`). Checked before a
    /// save, and each is also a named `CHECK` constraint of the column, so that batch
    /// requests and other programs obey it; a predicate must then test this value alone
    /// (no other key, no relationship).
    ///
    /// Core Data equivalent: `validationPredicates` of `NSPropertyDescription`.
    public var validationPredicates: [String] = []
    /// How the value is computed, when the attribute is derived (read-only in Swift), in the
    /// predicate language's value syntax:
    /// - an expression over the row's own attributes (`"price * quantity"`,
    ///   `"firstName + ' ' + lastName"`): a `GENERATED ALWAYS AS (…) STORED` column;
    /// - `"items.@count"`, or `"items.@sum.price"` for a to-many relationship stored by a
    ///   foreign key: a column kept current by triggers in every transaction that changes the
    ///   relationship's rows — saves, batch requests and other programs alike.
    ///
    /// A save reads the derived values of the rows it wrote (and of the owners whose
    /// aggregates it moved) in its own round trip. Derived attributes work in predicates and
    /// sort descriptors like any other.
    ///
    /// Core Data equivalent: `NSDerivedAttributeDescription.derivationExpression`.
    public var derivationExpression: String?
    /// True when the history of a deletion keeps the object's value of this attribute (its
    /// *tombstone*), so that a process reading the history later still knows what was
    /// deleted — a unique name, an external ID. See ``PersistentHistoryChange/tombstone``.
    ///
    /// Core Data equivalent: `preservesValueInHistoryOnDeletion`.
    public var preservesValueInHistoryOnDeletion = false
    /// For a composite attribute, its elements (attributes of their own). An entity stores
    /// each element as a column named after both (`address_city`) and lists it as a
    /// property named `address.city`, which predicates, sort descriptors, batch requests and
    /// `value(forKey:)` use; `value(forKey: "address")` gives the elements by name. In an
    /// `@Entity` class, a property of a `@Composite` struct type.
    ///
    /// Core Data equivalent: `NSCompositeAttributeDescription.elements`.
    public var compositeElements: [AttributeDescription]?

    /// Describes an attribute.
    public init(name: String, type: AttributeType, isOptional: Bool = false, defaultValue: AttributeValue = .null,
                minValue: Double? = nil, maxValue: Double? = nil, minLength: Int? = nil, maxLength: Int? = nil,
                regularExpression: String? = nil, isIndexed: Bool = false, isUnique: Bool = false,
                columnName: String? = nil) {
        self.name = name
        self.attributeType = type
        self.isOptional = isOptional
        self.defaultValue = defaultValue
        self.minValue = minValue
        self.maxValue = maxValue
        self.minLength = minLength
        self.maxLength = maxLength
        self.regularExpression = regularExpression
        self.isIndexed = isIndexed
        self.isUnique = isUnique
        self.columnName = columnName ?? SchemaNaming.snakeCase(name)
    }

    /// Describes an attribute of a Swift type (`Int`, `String?`, `Date`, …); used by `@Entity`.
    public init<Value: PersistentAttributeValue>(
        name: String, valueType: Value.Type, defaultValue: Value? = nil, minValue: Double? = nil, maxValue: Double? = nil,
        minLength: Int? = nil, maxLength: Int? = nil, regularExpression: String? = nil, isIndexed: Bool = false,
        isUnique: Bool = false, columnName: String? = nil
    ) {
        self.init(name: name, type: Value.attributeType, isOptional: Value.isOptionalAttribute,
                  defaultValue: defaultValue?.attributeValue ?? .null, minValue: minValue, maxValue: maxValue,
                  minLength: minLength, maxLength: maxLength, regularExpression: regularExpression,
                  isIndexed: isIndexed, isUnique: isUnique, columnName: columnName)
    }

    /// Describes an attribute holding any `Codable` value, stored as `jsonb`; used by `@Entity`.
    @_disfavoredOverload
    public init<Value: Codable>(
        name: String, valueType: Value.Type, defaultValue: Value? = nil, minValue: Double? = nil, maxValue: Double? = nil,
        minLength: Int? = nil, maxLength: Int? = nil, regularExpression: String? = nil, isIndexed: Bool = false,
        isUnique: Bool = false, columnName: String? = nil
    ) {
        let encoded = defaultValue.flatMap { try? JSONEncoder.attributes.encode($0) }
        self.init(name: name, type: .codable, isOptional: Value.self is any OptionalMarker.Type,
                  defaultValue: encoded.map(AttributeValue.json) ?? .null, isIndexed: isIndexed, isUnique: isUnique,
                  columnName: columnName)
    }

    /// The reasons `value` breaks this attribute's rules (empty when it is valid).
    func violations(of value: AttributeValue) -> [String] {
        if value.isNull {
            return isOptional ? [] : ["is required (not optional) but is nil"]
        }
        guard value.fits(attributeType) else {
            return ["holds a \(value.typeName) value where \(attributeType) is expected"]
        }
        guard value.isInRange(of: attributeType) else {
            let number = if case .integer(let integer) = value { "\(integer)" } else { value.typeName }
            return ["is \(number), out of the range of \(attributeType)"]
        }
        var problems: [String] = []
        let number: Double? = if case .date(let date) = value { date.timeIntervalSince1970 } else { value.numericValue }
        if let number {
            if let minValue, number < minValue { problems.append("is \(number), below the minimum \(minValue)") }
            if let maxValue, number > maxValue { problems.append("is \(number), above the maximum \(maxValue)") }
        }
        if minLength != nil || maxLength != nil {
            let length: Int? = switch value {
            case .string(let string): string.count
            case .data(let data): data.count
            default: nil
            }
            if let length {
                if let minLength, length < minLength { problems.append("has length \(length), shorter than the minimum \(minLength)") }
                if let maxLength, length > maxLength { problems.append("has length \(length), longer than the maximum \(maxLength)") }
            }
        }
        if let regularExpression, case .string(let string) = value,
           let expression = Self.wholeStringExpression(regularExpression),
           expression.firstMatch(in: string, range: NSRange(string.startIndex..., in: string)) == nil {
            problems.append("\"\(string)\" does not match the pattern \(regularExpression)")
        }
        return problems
    }

    /// True when values can break more than optionality and type: a range, a length or a
    /// pattern is set.
    var hasValueRules: Bool {
        minValue != nil || maxValue != nil || minLength != nil || maxLength != nil || regularExpression != nil
    }

    private static let expressions = Locked<[String: NSRegularExpression]>([:])

    /// The compiled `^(?:pattern)$` of a regular-expression rule (nil when it does not
    /// compile: the model check reports that), compiled once per pattern.
    private static func wholeStringExpression(_ pattern: String) -> NSRegularExpression? {
        if let cached = expressions.withLock({ $0[pattern] }) { return cached }
        guard let expression = try? NSRegularExpression(pattern: "^(?:\(pattern))$") else { return nil }
        expressions.withLock { $0[pattern] = expression }
        return expression
    }
}

/// Lets the `Codable` attribute initializer tell `T?` from `T`.
public protocol OptionalMarker {}
extension Optional: OptionalMarker {}
