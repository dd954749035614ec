/// A Swift type that can be read from a column of a query result.
///
/// Decoding reads straight from libpq's result memory; ``PostgresCell/bytes`` is valid
/// only during the call.
public protocol PostgresDecodable: Sendable {
    /// Decodes a non-NULL value.
    static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Self
    /// The value for SQL NULL; types other than `Optional` throw.
    static func decodeNull() throws(PostgresDecodingError) -> Self
}

extension PostgresDecodable {
    public static func decodeNull() throws(PostgresDecodingError) -> Self {
        throw .unexpectedNull
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Self {
        try Wrapped.decode(from: cell)
    }
    public static func decodeNull() throws(PostgresDecodingError) -> Self { nil }
}
