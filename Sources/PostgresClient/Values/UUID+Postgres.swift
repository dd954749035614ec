import Foundation

extension UUID: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .uuid }
    public static var postgresArrayType: PostgresType { .uuidArray }

    public func encode(into buffer: inout PostgresBuffer) {
        withUnsafeBytes(of: uuid) { buffer.writeBytes($0) }
    }

    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> UUID {
        guard cell.type == .uuid else { throw .typeMismatch }
        switch cell.format {
        case .binary:
            guard cell.bytes.count == 16 else { throw .malformed("uuid of \(cell.bytes.count) bytes") }
            return UUID(uuid: cell.bytes.loadUnaligned(as: uuid_t.self))
        case .text:
            guard let uuid = UUID(uuidString: cell.string) else { throw .malformed("uuid text \"\(cell.string)\"") }
            return uuid
        }
    }
}
