import CLibPQ
import Foundation

/// The parameter values of one statement (`$1`, `$2`, …), encoded in binary into one buffer.
///
/// Most code passes values straight to ``Connection/query(_:_:)``; build bindings by hand
/// when the number of parameters is known only at run time:
///
/// ```swift
/// var bindings = PostgresBindings()
/// for id in ids { try bindings.append(id) }
/// ```
public struct PostgresBindings: Sendable {
    var buffer = PostgresBuffer()
    // Start of each value in `buffer`, or -1 for NULL.
    private var offsets: [Int32] = []
    private var lengths: [Int32] = []
    private(set) var types: [UInt32] = []

    public init() {}

    public init<each Value: PostgresEncodable>(_ values: repeat each Value) throws {
        for value in repeat each values { try append(value) }
    }

    public var count: Int { offsets.count }
    public var isEmpty: Bool { offsets.isEmpty }
    /// The bytes of the encoded values.
    var byteCount: Int { buffer.count }

    /// Makes room for about `bytes` more bytes of values, so that encoding large arrays
    /// grows (and copies) the buffer at most once.
    public mutating func reserveCapacity(forAdditionalBytes bytes: Int) {
        buffer.reserveCapacity(forAdditional: bytes)
    }

    /// Appends a value as the next parameter; `Optional.none` appends NULL.
    public mutating func append<Value: PostgresEncodable>(_ value: Value) throws {
        types.append(Value.postgresType.oid)
        if value.isPostgresNull {
            offsets.append(-1)
            lengths.append(0)
            return
        }
        let start = buffer.count
        try value.encode(into: &buffer)
        guard buffer.count - start <= Int32.max, buffer.count <= Int32.max else {
            throw PostgresError(.encoding, message: "parameter \(count + 1) is larger than 2 GiB")
        }
        offsets.append(Int32(start))
        lengths.append(Int32(buffer.count - start))
    }

    /// Appends a parameter whose type is known only at run time: `encode` writes its binary
    /// form (without a length prefix). Generic layers use it for values of a model's types.
    public mutating func append(type: PostgresType, encoding encode: (inout PostgresBuffer) throws -> Void) throws {
        types.append(type.oid)
        let start = buffer.count
        try encode(&buffer)
        guard buffer.count - start <= Int32.max, buffer.count <= Int32.max else {
            throw PostgresError(.encoding, message: "parameter \(count + 1) is larger than 2 GiB")
        }
        offsets.append(Int32(start))
        lengths.append(Int32(buffer.count - start))
    }

    /// Appends NULL of the given type (or of a type the server infers).
    public mutating func appendNull(_ type: PostgresType = .unspecified) {
        types.append(type.oid)
        offsets.append(-1)
        lengths.append(0)
    }

    /// Parameter `index` (from 0): its type's OID and its binary value, nil for NULL. For
    /// tests of the planners, which read back what a statement would send.
    package func parameter(at index: Int) -> (type: UInt32, bytes: [UInt8]?) {
        guard offsets[index] >= 0 else { return (types[index], nil) }
        let start = Int(offsets[index])
        return (types[index], Array(buffer.bytes[start..<start + Int(lengths[index])]))
    }

    /// Calls `body` with the arrays `PQsendQueryParams` takes: types, values, lengths, formats.
    func withUnsafeParameters<R>(
        _ body: (Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
                 UnsafePointer<Int32>?) throws -> R
    ) rethrows -> R {
        let count = offsets.count
        if count == 0 { return try body(0, nil, nil, nil, nil) }
        let formats = [Int32](repeating: PostgresFormat.binary.rawValue, count: count)
        return try buffer.bytes.withUnsafeBytes { raw in
            // A zero-length value still needs a non-NULL pointer, or libpq sends NULL.
            let base = raw.baseAddress?.assumingMemoryBound(to: CChar.self) ?? Self.emptyValue
            var values = [UnsafePointer<CChar>?](repeating: nil, count: count)
            for index in 0..<count where offsets[index] >= 0 {
                values[index] = lengths[index] == 0 ? Self.emptyValue : base + Int(offsets[index])
            }
            return try types.withUnsafeBufferPointer { types in
                try values.withUnsafeBufferPointer { values in
                    try lengths.withUnsafeBufferPointer { lengths in
                        try formats.withUnsafeBufferPointer { formats in
                            try body(Int32(count), types.baseAddress, values.baseAddress, lengths.baseAddress,
                                     formats.baseAddress)
                        }
                    }
                }
            }
        }
    }

    nonisolated(unsafe) private static let emptyValue: UnsafePointer<CChar> = UnsafePointer(strdup("")!)
}
