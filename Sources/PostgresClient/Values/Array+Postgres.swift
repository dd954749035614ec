/// One-dimensional arrays of any ``PostgresArrayElement`` travel as PostgreSQL arrays
/// (`[Int]` as `bigint[]`, `[String?]` as `text[]` with NULL elements).
extension Array: PostgresEncodable where Element: PostgresArrayElement {
    public static var postgresType: PostgresType { Element.postgresArrayType }

    // The arrays a save binds (keys, row versions) are written without a dynamic call per element.
    @_specialize(where Element == Int64)
    @_specialize(where Element == TransactionID)
    @_specialize(where Element == Int32)
    @_specialize(where Element == String)
    public func encode(into buffer: inout PostgresBuffer) throws {
        // A header, then a length and the value per element (its size in memory, a guess for
        // variable-length types).
        buffer.reserveCapacity(forAdditional: 20 + count * (4 + MemoryLayout<Element>.size))
        buffer.writeInteger(Int32(isEmpty ? 0 : 1))  // dimensions
        buffer.writeInteger(Int32(contains { $0.isPostgresNull } ? 1 : 0))
        buffer.writeInteger(Element.postgresType.oid)
        if isEmpty { return }
        buffer.writeInteger(Int32(count))
        buffer.writeInteger(Int32(1))  // lower bound
        for element in self {
            try buffer.writeLengthPrefixed(element)
        }
    }
}

extension Array: PostgresDecodable where Element: PostgresDecodable {
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> [Element] {
        guard cell.format == .binary else {
            throw .malformed("arrays are read in binary format; run the query with binary results")
        }
        let bytes = cell.bytes
        guard bytes.count >= 12 else { throw .typeMismatch }
        let dimensions = cell.loadBigEndian(Int32.self)
        let elementType = PostgresType(oid: cell.loadBigEndian(UInt32.self, at: 8))
        if dimensions == 0 { return [] }
        guard dimensions == 1 else {
            throw dimensions > 1 ? .malformed("\(dimensions)-dimensional arrays are not supported") : .typeMismatch
        }
        guard bytes.count >= 20 else { throw .malformed("array header") }
        let count = Int(cell.loadBigEndian(Int32.self, at: 12))
        var offset = 20
        var result: [Element] = []
        result.reserveCapacity(count)
        for _ in 0..<count {
            guard offset + 4 <= bytes.count else { throw .malformed("array is shorter than its header says") }
            let length = Int(cell.loadBigEndian(Int32.self, at: offset))
            offset += 4
            if length < 0 {
                result.append(try Element.decodeNull())
                continue
            }
            guard offset + length <= bytes.count else { throw .malformed("array element overruns the value") }
            let element = PostgresCell(
                bytes: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length]),
                type: elementType, format: .binary)
            result.append(try Element.decode(from: element))
            offset += length
        }
        return result
    }
}
