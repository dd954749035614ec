extension String: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .text }
    public static var postgresArrayType: PostgresType { .textArray }

    public func encode(into buffer: inout PostgresBuffer) { buffer.writeString(self) }

    /// Reads text, varchar, char, name and json columns; in text format, any column
    /// (its canonical text form). jsonb in binary format loses its version byte.
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> String {
        if cell.format == .text || cell.type.isTextual || cell.type == .json || cell.type == .char {
            return cell.string
        }
        if cell.type == .jsonb {
            guard let version = cell.bytes.first, version == 1 else { throw .malformed("jsonb version") }
            return String(decoding: UnsafeRawBufferPointer(rebasing: cell.bytes.dropFirst()), as: UTF8.self)
        }
        throw .typeMismatch
    }
}
