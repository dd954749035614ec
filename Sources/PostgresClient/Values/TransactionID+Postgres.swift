/// A PostgreSQL transaction ID (`xid`), such as a row's `xmin`: the version of the row
/// that optimistic locking compares.
public struct TransactionID: PostgresArrayElement, PostgresDecodable, Hashable, Sendable {
    /// The 32-bit transaction number.
    public var rawValue: UInt32

    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    public static var postgresType: PostgresType { .xid }
    public static var postgresArrayType: PostgresType { .xidArray }
    public func encode(into buffer: inout PostgresBuffer) { buffer.writeInteger(rawValue) }
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> TransactionID {
        TransactionID(UInt32(truncatingIfNeeded: try cell.integerValue()))
    }
}
