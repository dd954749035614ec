import Foundation
import PostgresClient

/// The parameters of a planned statement as text, for planner tests that need no server:
/// `int8 7`, `text 'Buy%'`, `int8[] {1,2}`, `NULL`. The binary forms are PostgreSQL's
/// (big-endian integers, arrays with a header), read back here as the server would.
func boundValues(_ bindings: PostgresBindings) -> [String] {
    (0..<bindings.count).map { index in
        let (type, bytes) = bindings.parameter(at: index)
        guard let bytes else { return "NULL" }
        return describe(type: type, bytes[...])
    }
}

private func integer(_ bytes: ArraySlice<UInt8>) -> Int64 {
    var value: Int64 = 0
    for byte in bytes { value = value << 8 | Int64(byte) }
    // Sign-extend narrower integers.
    let shift = 64 - 8 * bytes.count
    return shift > 0 ? (value << shift) >> shift : value
}

private func describe(type: UInt32, _ bytes: ArraySlice<UInt8>) -> String {
    switch type {
    case PostgresType.bool.oid: return "bool \(bytes.first == 1)"
    case PostgresType.int2.oid: return "int2 \(integer(bytes))"
    case PostgresType.int4.oid: return "int4 \(integer(bytes))"
    case PostgresType.int8.oid: return "int8 \(integer(bytes))"
    case PostgresType.xid.oid: return "xid \(UInt32(truncatingIfNeeded: integer(bytes)))"
    case PostgresType.float8.oid: return "float8 \(Double(bitPattern: UInt64(bitPattern: integer(bytes))))"
    case PostgresType.text.oid, PostgresType.varchar.oid: return "text '\(String(decoding: bytes, as: UTF8.self))'"
    case PostgresType.jsonb.oid: return "jsonb \(String(decoding: bytes.dropFirst(), as: UTF8.self))"
    case PostgresType.timestamptz.oid:
        let seconds = Double(integer(bytes)) / 1_000_000 + 946_684_800
        return "timestamptz \(ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: seconds)))"
    default:
        if let element = arrayElement[type] { return describeArray(element, bytes) }
        return "oid\(type) \(bytes.map { String($0, radix: 16) }.joined())"
    }
}

private let arrayElement: [UInt32: (name: String, oid: UInt32)] = [
    PostgresType.int8Array.oid: ("int8", PostgresType.int8.oid), PostgresType.int4Array.oid: ("int4", PostgresType.int4.oid),
    PostgresType.int2Array.oid: ("int2", PostgresType.int2.oid), PostgresType.textArray.oid: ("text", PostgresType.text.oid),
    PostgresType.boolArray.oid: ("bool", PostgresType.bool.oid), PostgresType.xidArray.oid: ("xid", PostgresType.xid.oid),
    PostgresType.float8Array.oid: ("float8", PostgresType.float8.oid),
    PostgresType.timestamptzArray.oid: ("timestamptz", PostgresType.timestamptz.oid),
]

/// `int8[] {1,2}`: an array's elements without their type names.
private func describeArray(_ element: (name: String, oid: UInt32), _ bytes: ArraySlice<UInt8>) -> String {
    let base = bytes.startIndex
    func int32(_ at: Int) -> Int { Int(integer(bytes[base + at..<base + at + 4])) }
    let dimensions = int32(0)
    guard dimensions > 0 else { return "\(element.name)[] {}" }
    let count = int32(12)
    var offset = 20
    var items: [String] = []
    for _ in 0..<count {
        let length = int32(offset)
        offset += 4
        if length < 0 {
            items.append("NULL")
            continue
        }
        let text = describe(type: element.oid, bytes[base + offset..<base + offset + length])
        items.append(String(text.dropFirst(element.name.count + 1)))
        offset += length
    }
    return "\(element.name)[] {\(items.joined(separator: ","))}"
}
