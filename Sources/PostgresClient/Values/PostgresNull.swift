/// SQL NULL of an unspecified type, for a parameter the server infers the type of.
public struct PostgresNull: PostgresEncodable, Hashable {
    public init() {}
    public static var postgresType: PostgresType { .unspecified }
    public func encode(into buffer: inout PostgresBuffer) {}
    public var isPostgresNull: Bool { true }
}
