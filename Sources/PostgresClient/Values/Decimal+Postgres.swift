import Foundation

/// `Decimal` travels as `numeric`. Foundation's `Decimal` holds 38 significant digits;
/// a numeric with more is an `outOfRange` decoding error rather than a silent rounding.
extension Decimal: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .numeric }
    public static var postgresArrayType: PostgresType { .numericArray }

    public func encode(into buffer: inout PostgresBuffer) throws {
        if isNaN { return NumericCoding.encodeNaN(into: &buffer) }
        try NumericCoding.encode(description, into: &buffer)
    }

    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Decimal {
        let text: String
        switch (cell.format, cell.type) {
        case (.binary, .numeric): text = try NumericCoding.decodeBinary(cell.bytes)
        case (.text, .numeric): text = cell.string
        case (_, .int2), (_, .int4), (_, .int8): return Decimal(try cell.integerValue())
        default: throw .typeMismatch
        }
        if text == "NaN" { return .nan }
        let significant = text.filter(\.isNumber).drop(while: { $0 == "0" })
        guard significant.count <= 38 || significant.reversed().drop(while: { $0 == "0" }).count <= 38 else {
            throw .outOfRange("numeric \(text) has more than the 38 significant digits Decimal holds")
        }
        guard let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else {
            throw .outOfRange("numeric \(text) does not fit in Decimal")
        }
        return value
    }
}

/// PostgreSQL's binary numeric: base-10000 digits with a weight, a sign and a display scale.
enum NumericCoding {
    private static let positive: UInt16 = 0x0000
    private static let negative: UInt16 = 0x4000
    private static let notANumber: UInt16 = 0xC000
    private static let positiveInfinity: UInt16 = 0xD000
    private static let negativeInfinity: UInt16 = 0xF000

    static func encodeNaN(into buffer: inout PostgresBuffer) {
        buffer.writeInteger(Int16(0))
        buffer.writeInteger(Int16(0))
        buffer.writeInteger(notANumber)
        buffer.writeInteger(Int16(0))
    }

    /// Encodes a plain decimal string (`-123.4500`).
    static func encode(_ text: String, into buffer: inout PostgresBuffer) throws {
        var body = Substring(text)
        let isNegative = body.hasPrefix("-")
        if isNegative { body = body.dropFirst() }
        let parts = body.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, !body.isEmpty, body.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }) else {
            throw PostgresError(.encoding, message: "cannot encode \"\(text)\" as numeric")
        }
        var integer = Array(parts[0].utf8.map { Int16($0 - 48) })
        let fraction = parts.count == 2 ? Array(parts[1].utf8.map { Int16($0 - 48) }) : []
        while integer.first == 0 { integer.removeFirst() }
        let scale = Int16(fraction.count)
        // Left-pad the integer part and right-pad the fraction to whole groups of four.
        let integerPadding = (4 - integer.count % 4) % 4
        let digitsAll = Array(repeating: 0, count: integerPadding) + integer
            + fraction + Array(repeating: 0, count: (4 - fraction.count % 4) % 4)
        var groups: [Int16] = stride(from: 0, to: digitsAll.count, by: 4).map { start in
            digitsAll[start] * 1000 + digitsAll[start + 1] * 100 + digitsAll[start + 2] * 10 + digitsAll[start + 3]
        }
        var weight = Int16((integerPadding + integer.count) / 4) - 1
        while groups.first == 0 {
            groups.removeFirst()
            weight -= 1
        }
        while groups.last == 0 { groups.removeLast() }
        if groups.isEmpty { weight = 0 }
        buffer.writeInteger(Int16(groups.count))
        buffer.writeInteger(weight)
        buffer.writeInteger(isNegative && !groups.isEmpty ? negative : positive)
        buffer.writeInteger(scale)
        for group in groups { buffer.writeInteger(group) }
    }

    /// Decodes binary numeric into its plain decimal text (`NaN`, `Infinity`, `-Infinity` too).
    static func decodeBinary(_ bytes: UnsafeRawBufferPointer) throws(PostgresDecodingError) -> String {
        guard bytes.count >= 8 else { throw .malformed("numeric of \(bytes.count) bytes") }
        func int16(_ offset: Int) -> Int16 { Int16(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int16.self)) }
        let count = Int(int16(0))
        let weight = Int(int16(2))
        let sign = UInt16(bitPattern: int16(4))
        let scale = Int(int16(6))
        guard count >= 0, bytes.count == 8 + 2 * count else { throw .malformed("numeric digit count") }
        switch sign {
        case notANumber: return "NaN"
        case positiveInfinity: return "Infinity"
        case negativeInfinity: return "-Infinity"
        case positive, negative: break
        default: throw .malformed("numeric sign \(sign)")
        }
        func digit(_ index: Int) -> Int { index >= 0 && index < count ? Int(int16(8 + 2 * index)) : 0 }
        var text = sign == negative ? "-" : ""
        if weight < 0 {
            text += "0"
        } else {
            text += String(digit(0))
            for index in stride(from: 1, through: weight, by: 1) {
                let group = String(digit(index))
                text += String(repeating: "0", count: 4 - group.count) + group
            }
        }
        if scale > 0 {
            var fraction = ""
            var index = weight + 1
            while fraction.count < scale {
                let group = String(digit(index))
                fraction += String(repeating: "0", count: 4 - group.count) + group
                index += 1
            }
            text += "." + fraction.prefix(scale)
        }
        return text
    }
}
