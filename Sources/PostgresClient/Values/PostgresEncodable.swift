/// A Swift value that can be sent to PostgreSQL as a bind parameter, in binary format.
///
/// Conform your own types by naming the PostgreSQL type and writing its binary form:
///
/// ```swift
/// extension Money: PostgresEncodable {
///     static var postgresType: PostgresType { .int8 }
///     func encode(into buffer: inout PostgresBuffer) throws { buffer.writeInteger(cents) }
/// }
/// ```
public protocol PostgresEncodable: Sendable {
    /// The PostgreSQL type the parameter is declared as.
    static var postgresType: PostgresType { get }
    /// Appends the value's binary representation (without a length prefix).
    func encode(into buffer: inout PostgresBuffer) throws
    /// True when the value is SQL NULL (only `Optional.none` is).
    var isPostgresNull: Bool { get }
}

extension PostgresEncodable {
    public var isPostgresNull: Bool { false }
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public static var postgresType: PostgresType { Wrapped.postgresType }
    public func encode(into buffer: inout PostgresBuffer) throws {
        if let value = self { try value.encode(into: &buffer) }
    }
    public var isPostgresNull: Bool { self == nil }
}

extension Optional: PostgresArrayElement where Wrapped: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { Wrapped.postgresArrayType }
}
