import Foundation

/// A Swift type that an attribute can hold: the integer types, `Double`, `Float`, `Decimal`,
/// `String`, `Bool`, `Date`, `Data`, `UUID`, `URL`, and optionals of these.
///
/// `@Entity` uses it to describe properties and to read and write them without boxing.
/// Other `Codable` types are stored as `jsonb` without conforming to it.
public protocol PersistentAttributeValue {
    /// The attribute type values of this type are stored as.
    static var attributeType: AttributeType { get }
    /// True for `Optional`: the attribute may hold NULL.
    static var isOptionalAttribute: Bool { get }
    /// Makes a value from its stored form; the store only hands over values of the right type.
    init(attributeValue: AttributeValue)
    /// The stored form of the value.
    var attributeValue: AttributeValue { get }
}

extension PersistentAttributeValue {
    /// Values are required unless the type is an `Optional`.
    public static var isOptionalAttribute: Bool { false }
}

@usableFromInline
func attributeTypeMismatch(_ value: AttributeValue, _ type: Any.Type) -> Never {
    preconditionFailure("PostgresData: a \(value.typeName) value reached an attribute of type \(type); the store checks types, so this is a bug")
}

/// `T?` holds what `T` holds, or NULL.
extension Optional: PersistentAttributeValue where Wrapped: PersistentAttributeValue {
    public static var attributeType: AttributeType { Wrapped.attributeType }
    public static var isOptionalAttribute: Bool { true }
    @inlinable public init(attributeValue: AttributeValue) {
        if case .null = attributeValue { self = nil } else { self = Wrapped(attributeValue: attributeValue) }
    }
    @inlinable public var attributeValue: AttributeValue { self?.attributeValue ?? .null }
}

extension Int: PersistentAttributeValue {
    public static var attributeType: AttributeType { .integer64 }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .integer(let value) = attributeValue else { attributeTypeMismatch(attributeValue, Int.self) }
        self = Int(value)
    }
    @inlinable public var attributeValue: AttributeValue { .integer(Int64(self)) }
}

extension Int64: PersistentAttributeValue {
    public static var attributeType: AttributeType { .integer64 }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .integer(let value) = attributeValue else { attributeTypeMismatch(attributeValue, Int64.self) }
        self = value
    }
    @inlinable public var attributeValue: AttributeValue { .integer(self) }
}

extension Int32: PersistentAttributeValue {
    public static var attributeType: AttributeType { .integer32 }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .integer(let value) = attributeValue else { attributeTypeMismatch(attributeValue, Int32.self) }
        self = Int32(truncatingIfNeeded: value)
    }
    @inlinable public var attributeValue: AttributeValue { .integer(Int64(self)) }
}

extension Int16: PersistentAttributeValue {
    public static var attributeType: AttributeType { .integer16 }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .integer(let value) = attributeValue else { attributeTypeMismatch(attributeValue, Int16.self) }
        self = Int16(truncatingIfNeeded: value)
    }
    @inlinable public var attributeValue: AttributeValue { .integer(Int64(self)) }
}

extension Double: PersistentAttributeValue {
    public static var attributeType: AttributeType { .double }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .double(let value) = attributeValue else { attributeTypeMismatch(attributeValue, Double.self) }
        self = value
    }
    @inlinable public var attributeValue: AttributeValue { .double(self) }
}

extension Float: PersistentAttributeValue {
    public static var attributeType: AttributeType { .float }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .float(let value) = attributeValue else { attributeTypeMismatch(attributeValue, Float.self) }
        self = value
    }
    @inlinable public var attributeValue: AttributeValue { .float(self) }
}

extension Decimal: PersistentAttributeValue {
    public static var attributeType: AttributeType { .decimal }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .decimal(let value) = attributeValue else { attributeTypeMismatch(attributeValue, Decimal.self) }
        self = value
    }
    @inlinable public var attributeValue: AttributeValue { .decimal(self) }
}

extension String: PersistentAttributeValue {
    public static var attributeType: AttributeType { .string }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .string(let value) = attributeValue else { attributeTypeMismatch(attributeValue, String.self) }
        self = value
    }
    @inlinable public var attributeValue: AttributeValue { .string(self) }
}

extension Bool: PersistentAttributeValue {
    public static var attributeType: AttributeType { .boolean }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .boolean(let value) = attributeValue else { attributeTypeMismatch(attributeValue, Bool.self) }
        self = value
    }
    @inlinable public var attributeValue: AttributeValue { .boolean(self) }
}

extension Date: PersistentAttributeValue {
    public static var attributeType: AttributeType { .date }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .date(let value) = attributeValue else { attributeTypeMismatch(attributeValue, Date.self) }
        self = value
    }
    @inlinable public var attributeValue: AttributeValue { .date(self) }
}

extension Data: PersistentAttributeValue {
    public static var attributeType: AttributeType { .binaryData }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .data(let value) = attributeValue else { attributeTypeMismatch(attributeValue, Data.self) }
        self = value
    }
    @inlinable public var attributeValue: AttributeValue { .data(self) }
}

extension UUID: PersistentAttributeValue {
    public static var attributeType: AttributeType { .uuid }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .uuid(let value) = attributeValue else { attributeTypeMismatch(attributeValue, UUID.self) }
        self = value
    }
    @inlinable public var attributeValue: AttributeValue { .uuid(self) }
}

extension URL: PersistentAttributeValue {
    public static var attributeType: AttributeType { .uri }
    @inlinable public init(attributeValue: AttributeValue) {
        guard case .url(let value) = attributeValue else { attributeTypeMismatch(attributeValue, URL.self) }
        self = value
    }
    @inlinable public var attributeValue: AttributeValue { .url(self) }
}
