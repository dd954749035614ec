import Foundation

/// `Data` travels as `bytea`.
extension Data: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .bytea }
    public static var postgresArrayType: PostgresType { .byteaArray }

    public func encode(into buffer: inout PostgresBuffer) {
        withUnsafeBytes { buffer.writeBytes($0) }
    }

    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Data {
        guard cell.type == .bytea else { throw .typeMismatch }
        switch cell.format {
        case .binary:
            return Data(cell.bytes)
        case .text:
            // The hex form: \x followed by two hex digits per byte.
            let bytes = cell.bytes
            guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x") else {
                throw .malformed("bytea text is not in hex format")
            }
            var data = Data(capacity: (bytes.count - 2) / 2)
            var index = 2
            while index + 1 < bytes.count {
                guard let high = hexValue(bytes[index]), let low = hexValue(bytes[index + 1]) else {
                    throw .malformed("bytea text has a non-hex digit")
                }
                data.append(high << 4 | low)
                index += 2
            }
            return data
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
