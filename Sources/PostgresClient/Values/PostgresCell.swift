/// One non-NULL value of a result, as libpq holds it.
public struct PostgresCell {
    /// The value's bytes in ``format``, borrowed from the result.
    public let bytes: UnsafeRawBufferPointer
    public let type: PostgresType
    public let format: PostgresFormat

    public init(bytes: UnsafeRawBufferPointer, type: PostgresType, format: PostgresFormat) {
        self.bytes = bytes
        self.type = type
        self.format = format
    }

    /// The bytes as UTF-8 text (for text format and textual types).
    public var string: String { String(decoding: bytes, as: UTF8.self) }

    @inline(__always)
    func loadBigEndian<T: FixedWidthInteger>(_: T.Type, at offset: Int = 0) -> T {
        T(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
