import Foundation
import PostgresClient

/// Binary encoding and decoding of ``AttributeValue``s by attribute type.
enum ValueCoding {
    /// Writes one non-NULL value in the binary format of `type`.
    static func encode(_ value: AttributeValue, as type: AttributeType, into buffer: inout PostgresBuffer) throws {
        switch (value, type) {
        case (.integer(let integer), .integer16): buffer.writeInteger(Int16(truncatingIfNeeded: integer))
        case (.integer(let integer), .integer32): buffer.writeInteger(Int32(truncatingIfNeeded: integer))
        case (.integer(let integer), .integer64): buffer.writeInteger(integer)
        case (.double(let double), _): double.encode(into: &buffer)
        case (.float(let float), _): float.encode(into: &buffer)
        case (.decimal(let decimal), _): try decimal.encode(into: &buffer)
        case (.string(let string), _): buffer.writeString(string)
        case (.boolean(let bool), _): bool.encode(into: &buffer)
        case (.date(let date), _): try date.encode(into: &buffer)
        case (.data(let data), _): buffer.writeBytes(data)
        case (.uuid(let uuid), _): uuid.encode(into: &buffer)
        case (.url(let url), _): buffer.writeString(url.absoluteString)
        case (.json(let data), _):
            buffer.writeInteger(UInt8(1))  // jsonb binary format version
            buffer.writeBytes(data)
        case (.object(let id), _):
            guard let key = id.primaryKey else {
                throw PostgresDataError.invalidRequest("\(id) has no primary key yet; this is a bug in the save plan")
            }
            buffer.writeInteger(key)
        case (.integer, _), (.null, _):
            throw PostgresDataError.invalidRequest("cannot encode \(value.typeName) as \(type)")
        }
    }

    /// Writes the fields of one binary COPY row (after its field count): each value's
    /// length and bytes, or -1 for NULL.
    static func writeCopyFields(_ values: [AttributeValue], types: [AttributeType], into buffer: inout PostgresBuffer) throws {
        for (value, type) in zip(values, types) { try writeField(value, as: type, into: &buffer) }
    }

    /// One length-prefixed value (-1 for NULL), as COPY rows and array elements hold them.
    static func writeField(_ value: AttributeValue, as type: AttributeType, into buffer: inout PostgresBuffer) throws {
        if value.isNull {
            buffer.writeInteger(Int32(-1))
            return
        }
        let length = buffer.reserveLength()
        try encode(value, as: type, into: &buffer)
        buffer.finishLength(at: length)
    }

    /// One parameter of `type` holding `value` (NULL allowed).
    static func append(_ value: AttributeValue, of type: AttributeType, to bindings: inout PostgresBindings) throws {
        guard !value.isNull else { return bindings.appendNull(type.postgresType) }
        try bindings.append(type: type.postgresType) { buffer in try encode(value, as: type, into: &buffer) }
    }

    /// A one-dimensional array parameter of `type` holding `values` (NULL elements allowed).
    static func appendArray(_ values: some Collection<AttributeValue>, of type: AttributeType, to bindings: inout PostgresBindings) throws {
        try bindings.append(type: type.postgresArrayType) { buffer in
            // A header, then a length and (for most types) at most 8 bytes per element.
            buffer.reserveCapacity(forAdditional: 20 + 12 * values.count)
            buffer.writeInteger(Int32(1))
            buffer.writeInteger(Int32(values.contains { $0.isNull } ? 1 : 0))
            buffer.writeInteger(type.postgresType.oid)
            buffer.writeInteger(Int32(values.count))
            buffer.writeInteger(Int32(1))
            for value in values { try writeField(value, as: type, into: &buffer) }
        }
    }

    /// Reads the column at `column` as a value of `type`.
    static func decode(_ row: Row, at column: Int, as type: AttributeType) throws -> AttributeValue {
        if row.isNull(at: column) { return .null }
        switch type {
        case .integer16, .integer32, .integer64: return .integer(try row.decode(Int64.self, at: column))
        case .double: return .double(try row.decode(Double.self, at: column))
        case .float: return .float(try row.decode(Float.self, at: column))
        case .decimal: return .decimal(try row.decode(Decimal.self, at: column))
        case .string: return .string(try row.decode(String.self, at: column))
        case .boolean: return .boolean(try row.decode(Bool.self, at: column))
        case .date: return .date(try row.decode(Date.self, at: column))
        case .binaryData: return .data(try row.decode(Data.self, at: column))
        case .uuid: return .uuid(try row.decode(UUID.self, at: column))
        case .uri:
            let string = try row.decode(String.self, at: column)
            guard let url = URL(string: string) else {
                throw PostgresDataError.invalidRequest("column \(column) holds \"\(string)\", which is not a URL")
            }
            return .url(url)
        case .codable:
            let json = try row.decode(PostgresJSONText.self, at: column)
            return .json(json.data)
        }
    }
}

/// The text of a `json`/`jsonb` value, undecoded.
struct PostgresJSONText: PostgresDecodable {
    var data: Data

    static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> PostgresJSONText {
        var bytes = cell.bytes
        if cell.format == .binary && cell.type == .jsonb {
            guard bytes.first == 1 else { throw .malformed("jsonb version \(bytes.first ?? 0)") }
            bytes = UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
        } else if cell.type != .json && cell.type != .jsonb {
            throw .typeMismatch
        }
        return PostgresJSONText(data: Data(bytes))
    }
}
