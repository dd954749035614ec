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

/// A value, both encodable and decodable.
public typealias PostgresCodable = PostgresEncodable & PostgresDecodable

/// One non-NULL value of a result, as libpq holds it.
public struct PostgresCell {
    /// The value's bytes in ``format``, borrowed from the result.
    public let bytes: UnsafeRawBufferPointer
    public let type: PostgresType
    public let format: PostgresFormat

    public init(bytes: UnsafeRawBufferPointer, type: PostgresType, format: PostgresFormat) {
        self.bytes = bytes
        self.type = type
        self.format = format
    }

    /// The bytes as UTF-8 text (for text format and textual types).
    public var string: String { String(decoding: bytes, as: UTF8.self) }

    @inline(__always)
    func loadBigEndian<T: FixedWidthInteger>(_: T.Type, at offset: Int = 0) -> T {
        T(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}

/// Why a value could not be decoded; wrapped into a ``PostgresError`` that names the column.
public enum PostgresDecodingError: Error, Sendable, Equatable {
    /// The column's type cannot become the Swift type asked for.
    case typeMismatch
    /// The column is NULL and the Swift type is not optional.
    case unexpectedNull
    /// The bytes are not a valid value of the column's type.
    case malformed(String)
    /// The value does not fit the Swift type (a bigint asked as Int16, say).
    case outOfRange(String)
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Self {
        try Wrapped.decode(from: cell)
    }
    public static func decodeNull() throws(PostgresDecodingError) -> Self { nil }
}
