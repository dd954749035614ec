/// The bytes of parameter values being encoded, written in PostgreSQL's binary format.
///
/// One buffer holds all parameters of a statement (or all rows of a COPY chunk), so
/// encoding a value appends to one array instead of allocating per value.
public struct PostgresBuffer: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }

    public mutating func writeInteger<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    public mutating func writeBytes<S: Sequence>(_ data: S) where S.Element == UInt8 {
        bytes.append(contentsOf: data)
    }

    public mutating func writeBytes(_ buffer: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: buffer)
    }

    public mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// Writes a value as COPY rows and array elements hold it: its length, then its bytes
    /// (length -1 and no bytes for NULL).
    package mutating func writeLengthPrefixed<Value: PostgresEncodable>(_ value: Value) throws {
        if value.isPostgresNull {
            writeInteger(Int32(-1))
            return
        }
        let length = reserveLength()
        try value.encode(into: &self)
        finishLength(at: length)
    }

    /// Writes a 4-byte length placeholder and returns where it is, for ``finishLength(at:)``.
    package mutating func reserveLength() -> Int {
        let at = bytes.count
        bytes.append(contentsOf: [0, 0, 0, 0])
        return at
    }

    /// Fills in a placeholder from ``reserveLength()`` with the number of bytes written since.
    package mutating func finishLength(at position: Int) {
        let length = UInt32(bytes.count - position - 4)
        bytes[position] = UInt8(truncatingIfNeeded: length >> 24)
        bytes[position + 1] = UInt8(truncatingIfNeeded: length >> 16)
        bytes[position + 2] = UInt8(truncatingIfNeeded: length >> 8)
        bytes[position + 3] = UInt8(truncatingIfNeeded: length)
    }

    mutating func removeAll(keepingCapacity: Bool) {
        bytes.removeAll(keepingCapacity: keepingCapacity)
    }

    mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeMutableBytes(body)
    }
}
