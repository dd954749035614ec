extension Bool: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .bool }
    public static var postgresArrayType: PostgresType { .boolArray }

    public func encode(into buffer: inout PostgresBuffer) {
        buffer.writeInteger(UInt8(self ? 1 : 0))
    }

    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Bool {
        guard cell.type == .bool else { throw .typeMismatch }
        switch cell.format {
        case .binary:
            guard cell.bytes.count == 1 else { throw .malformed("boolean of \(cell.bytes.count) bytes") }
            return cell.bytes[0] != 0
        case .text:
            switch cell.string {
            case "t", "true": return true
            case "f", "false": return false
            case let other: throw .malformed("boolean text \"\(other)\"")
            }
        }
    }
}
