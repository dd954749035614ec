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
