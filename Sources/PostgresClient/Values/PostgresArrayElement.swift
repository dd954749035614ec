/// A value that can also be an element of a one-dimensional PostgreSQL array.
public protocol PostgresArrayElement: PostgresEncodable {
    /// The array type whose elements are of ``PostgresEncodable/postgresType`` (`int4` → `int4[]`).
    static var postgresArrayType: PostgresType { get }
}
