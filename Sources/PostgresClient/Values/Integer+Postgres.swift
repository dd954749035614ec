extension PostgresCell {
    /// Reads any integer column (smallint, integer, bigint, oid) as a 64-bit value.
    @inline(__always)
    func integerValue() throws(PostgresDecodingError) -> Int64 {
        switch format {
        case .binary:
            switch (type, bytes.count) {
            case (.int8, 8): return loadBigEndian(Int64.self)
            case (.int4, 4): return Int64(loadBigEndian(Int32.self))
            case (.int2, 2): return Int64(loadBigEndian(Int16.self))
            case (.oidType, 4), (.xid, 4): return Int64(loadBigEndian(UInt32.self))
            case (.int8, _), (.int4, _), (.int2, _), (.oidType, _), (.xid, _):
                throw .malformed("\(type) of \(bytes.count) bytes")
            default: throw .typeMismatch
            }
        case .text:
            guard type == .int8 || type == .int4 || type == .int2 || type == .oidType || type == .xid else { throw .typeMismatch }
            guard let value = Int64(string) else { throw .malformed("integer text \"\(string)\"") }
            return value
        }
    }
}

extension FixedWidthInteger where Self: PostgresDecodable {
    @inline(__always)
    static func decodeInteger(from cell: PostgresCell) throws(PostgresDecodingError) -> Self {
        let value = try cell.integerValue()
        guard let exact = Self(exactly: value) else {
            throw .outOfRange("\(value) does not fit in \(Self.self)")
        }
        return exact
    }
}

extension Int16: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .int2 }
    public static var postgresArrayType: PostgresType { .int2Array }
    public func encode(into buffer: inout PostgresBuffer) { buffer.writeInteger(self) }
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Int16 {
        try decodeInteger(from: cell)
    }
}

extension Int32: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .int4 }
    public static var postgresArrayType: PostgresType { .int4Array }
    public func encode(into buffer: inout PostgresBuffer) { buffer.writeInteger(self) }
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Int32 {
        try decodeInteger(from: cell)
    }
}

extension Int64: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .int8 }
    public static var postgresArrayType: PostgresType { .int8Array }
    public func encode(into buffer: inout PostgresBuffer) { buffer.writeInteger(self) }
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Int64 {
        try cell.integerValue()
    }
}

/// `Int` travels as `bigint`.
extension Int: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .int8 }
    public static var postgresArrayType: PostgresType { .int8Array }
    public func encode(into buffer: inout PostgresBuffer) { buffer.writeInteger(Int64(self)) }
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Int {
        try decodeInteger(from: cell)
    }
}

/// `UInt32` travels as `oid`.
extension UInt32: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .oidType }
    public static var postgresArrayType: PostgresType { PostgresType(oid: 1028) }
    public func encode(into buffer: inout PostgresBuffer) { buffer.writeInteger(self) }
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> UInt32 {
        try decodeInteger(from: cell)
    }
}
