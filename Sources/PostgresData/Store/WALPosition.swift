import PostgresClient

/// A position in PostgreSQL's write-ahead log (a `pg_lsn`), as the byte offset it stands for.
struct WALPosition: Sendable, Comparable, Hashable, CustomStringConvertible {
    var offset: UInt64

    static func < (lhs: WALPosition, rhs: WALPosition) -> Bool { lhs.offset < rhs.offset }

    /// `16/B374D848`, as PostgreSQL prints it.
    var description: String {
        String(offset >> 32, radix: 16, uppercase: true) + "/" + String(offset & 0xFFFF_FFFF, radix: 16, uppercase: true)
    }

    /// SQL yielding a position as `int8` (`pg_lsn - '0/0'` is its byte offset, a numeric).
    static func select(_ function: String) -> String { "SELECT (\(function)() - '0/0'::pg_lsn)::int8" }

    /// The position a `select(_:)` query returned; nil for NULL (a server that is not a standby).
    static func decode(_ result: QueryResult) throws -> WALPosition? {
        guard let row = result.first, !row.isNull(at: 0) else { return nil }
        return WALPosition(offset: UInt64(bitPattern: try row.decode(Int64.self, at: 0)))
    }
}
