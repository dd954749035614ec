import Foundation

extension PostgresCell {
    /// Reads real, double precision, numeric or integer columns as a Double.
    func doubleValue() throws(PostgresDecodingError) -> Double {
        switch (format, type) {
        case (.binary, .float8):
            guard bytes.count == 8 else { throw .malformed("float8 of \(bytes.count) bytes") }
            return Double(bitPattern: loadBigEndian(UInt64.self))
        case (.binary, .float4):
            guard bytes.count == 4 else { throw .malformed("float4 of \(bytes.count) bytes") }
            return Double(Float(bitPattern: loadBigEndian(UInt32.self)))
        case (.binary, .numeric):
            let text = try NumericCoding.decodeBinary(bytes)
            guard let value = Double(text) else { throw .malformed("numeric \"\(text)\"") }
            return value
        case (_, .int2), (_, .int4), (_, .int8):
            return Double(try integerValue())
        case (.text, .float4), (.text, .float8), (.text, .numeric):
            switch string {
            case "Infinity": return .infinity
            case "-Infinity": return -.infinity
            case let text:
                guard let value = Double(text) else { throw .malformed("number text \"\(text)\"") }
                return value
            }
        default:
            throw .typeMismatch
        }
    }
}

extension Double: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .float8 }
    public static var postgresArrayType: PostgresType { .float8Array }
    public func encode(into buffer: inout PostgresBuffer) { buffer.writeInteger(bitPattern) }
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Double {
        try cell.doubleValue()
    }
}

extension Float: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .float4 }
    public static var postgresArrayType: PostgresType { .float4Array }
    public func encode(into buffer: inout PostgresBuffer) { buffer.writeInteger(bitPattern) }
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Float {
        if cell.format == .binary && cell.type == .float4 {
            guard cell.bytes.count == 4 else { throw .malformed("float4 of \(cell.bytes.count) bytes") }
            return Float(bitPattern: cell.loadBigEndian(UInt32.self))
        }
        return Float(try cell.doubleValue())
    }
}
