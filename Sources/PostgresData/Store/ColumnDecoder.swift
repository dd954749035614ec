import Foundation
import PostgresClient

/// Decodes one column of a result into ``AttributeValue``s, its type checked once per result
/// rather than once per value.
///
/// A binary column whose PostgreSQL type matches the attribute's gets a step that reads
/// libpq's bytes directly; other columns (numeric, JSON, URLs, a result in text format, a
/// type the attribute does not expect) go through the general ``ValueCoding/decode(_:at:as:)``.
/// A column holding keys of a to-one relationship's destination decodes to object IDs.
struct ColumnDecoder: Sendable {
    fileprivate enum Step: Sendable {
        case int16, int32, int64, float32, float64, text, bool, timestamp, uuid, bytes
        case foreignKey
        case general
    }

    /// The column's position in the result.
    let column: Int
    private let type: AttributeType
    private let destination: EntityDescription?
    private let step: Step

    init(column: Int, of result: QueryResult, as type: AttributeType, destination: EntityDescription? = nil) {
        self.column = column
        self.type = destination == nil ? type : .integer64
        self.destination = destination
        let described = result.columns[column]
        guard described.format == .binary else {
            self.step = .general
            return
        }
        if destination != nil {
            self.step = described.type == .int8 ? .foreignKey : .general
            return
        }
        self.step = switch (type, described.type) {
        case (.integer16, .int2): .int16
        case (.integer32, .int4): .int32
        case (.integer64, .int8): .int64
        case (.float, .float4): .float32
        case (.double, .float8): .float64
        case (.string, .text), (.string, .varchar): .text
        case (.boolean, .bool): .bool
        case (.date, .timestamptz): .timestamp
        case (.uuid, .uuid): .uuid
        case (.binaryData, .bytea): .bytes
        default: .general
        }
    }

    /// True when no value of the column can fail to decode: it has a step of its own (not a
    /// numeric, JSON or URL parsed from its bytes).
    var decodesWithoutFailure: Bool {
        if case .general = step { false } else { true }
    }

    /// The column's value in `row` (``AttributeValue/null`` for SQL NULL).
    @inline(__always)
    func value(_ row: Row) throws -> AttributeValue {
        if case .general = step {
            let value = try ValueCoding.decode(row, at: column, as: type)
            if let destination, case .integer(let key) = value {
                return .object(ManagedObjectID(entity: destination, primaryKey: key))
            }
            return value
        }
        return try row.withUnsafeBytes(at: column) { bytes throws -> AttributeValue in
            guard let bytes else { return .null }
            func integer<T: FixedWidthInteger>(_: T.Type) throws -> T { try Self.integer(T.self, from: bytes, column: column) }
            switch step {
            case .int16: return .integer(Int64(try integer(Int16.self)))
            case .int32: return .integer(Int64(try integer(Int32.self)))
            case .int64: return .integer(try integer(Int64.self))
            case .float32: return .float(Float(bitPattern: try integer(UInt32.self)))
            case .float64: return .double(Double(bitPattern: try integer(UInt64.self)))
            case .text: return .string(String(decoding: bytes, as: UTF8.self))
            case .bool: return .boolean(bytes.first != 0)
            case .timestamp:
                let micros = try integer(Int64.self)
                if micros == .max || micros == .min { return try ValueCoding.decode(row, at: column, as: .date) }
                return .date(Date(timeIntervalSinceReferenceDate: Double(micros) / 1_000_000 - 31_622_400))
            case .uuid:
                guard bytes.count == 16 else { return try ValueCoding.decode(row, at: column, as: .uuid) }
                return .uuid(UUID(uuid: bytes.loadUnaligned(as: uuid_t.self)))
            case .bytes: return .data(Data(bytes))
            case .foreignKey: return .object(ManagedObjectID(entity: destination.unsafelyUnwrapped, primaryKey: try integer(Int64.self)))
            case .general: preconditionFailure("handled above")
            }
        }
    }

    /// How ``DecodedRows`` keeps this column's values.
    var kind: DecodedRows.Layout.Kind {
        switch step {
        case .int16, .int32, .int64: .integer
        case .float32: .float
        case .float64: .double
        case .text: .string
        case .bool: .boolean
        case .timestamp: .date
        case .foreignKey: .key
        case .uuid, .bytes, .general: .general
        }
    }

    /// The destination of a to-one relationship's column, else nil.
    var destinationEntity: EntityDescription? { destination }

    /// The column's decoding when its value is read straight from its bytes (nil for a
    /// uuid, bytea or general column, which ``value(_:)`` decodes): a trivial value, which a
    /// loop over a million rows copies per cell without reference counting (the decoder holds
    /// a destination entity).
    var direct: Direct? {
        switch step {
        case .general, .uuid, .bytes: nil
        default: Direct(column: column, step: step)
        }
    }

    /// A column decoded straight from its bytes into ``DecodedRows``.
    struct Direct: Sendable {
        let column: Int
        fileprivate let step: Step

        /// Stores the column's values in rows `range` of `result` as values `0..<range.count`
        /// of a column of ``DecodedRows`` of the decoder's ``ColumnDecoder/kind`` (`values`,
        /// and `nulls` for a kind with NULL flags, which start cleared; strings start NULL).
        ///
        /// A column at a time, its step chosen once: the loop over the rows is the step's
        /// own, and reads each cell without making a ``Row`` (no reference counting per row).
        func store(_ result: QueryResult, rows range: Range<Int>, into values: UnsafeMutableRawPointer,
                   nulls: UnsafeMutablePointer<UInt8>?) throws {
            switch step {
            case .int16:
                try each(Int16.self, of: result, rows: range, nulls: nulls) { index, _, value in
                    values.storeBytes(of: Int64(value), toByteOffset: index &* 8, as: Int64.self)
                }
            case .int32:
                try each(Int32.self, of: result, rows: range, nulls: nulls) { index, _, value in
                    values.storeBytes(of: Int64(value), toByteOffset: index &* 8, as: Int64.self)
                }
            case .int64, .foreignKey:
                try each(Int64.self, of: result, rows: range, nulls: nulls) { index, _, value in
                    values.storeBytes(of: value, toByteOffset: index &* 8, as: Int64.self)
                }
            case .float32:
                try each(UInt32.self, of: result, rows: range, nulls: nulls) { index, _, value in
                    values.storeBytes(of: value, toByteOffset: index &* 4, as: UInt32.self)
                }
            case .float64:
                try each(UInt64.self, of: result, rows: range, nulls: nulls) { index, _, value in
                    values.storeBytes(of: value, toByteOffset: index &* 8, as: UInt64.self)
                }
            case .timestamp:
                try each(Int64.self, of: result, rows: range, nulls: nulls) { index, position, micros in
                    var seconds = Double(micros) / 1_000_000 - 31_622_400
                    if micros == .max || micros == .min {
                        guard case .date(let date) = try ValueCoding.decode(result[position], at: column, as: .date) else {
                            nulls.unsafelyUnwrapped[index] = 1
                            return
                        }
                        seconds = date.timeIntervalSinceReferenceDate
                    }
                    values.storeBytes(of: seconds, toByteOffset: index &* 8, as: Double.self)
                }
            case .text:
                let strings = values.assumingMemoryBound(to: String?.self)
                var index = 0
                for position in range {
                    if let bytes = result.unsafeBytes(atRow: position, column: column) {
                        strings[index] = String(decoding: bytes, as: UTF8.self)
                    }
                    index &+= 1
                }
            case .bool:
                var index = 0
                for position in range {
                    let flag = result.unsafeBytes(atRow: position, column: column).map { $0.first != 0 ? UInt8(1) : 0 } ?? DecodedRows.Layout.nullBoolean
                    values.storeBytes(of: flag, toByteOffset: index, as: UInt8.self)
                    index &+= 1
                }
            case .uuid, .bytes, .general:
                // Not direct (``ColumnDecoder/direct``): never here.
                break
            }
        }

        /// Calls `body` with the index, the row and the value of each cell of the rows `range`
        /// that is not NULL, read as a big-endian `T`; marks each NULL in `nulls`. A cell of
        /// another size throws.
        @inline(__always)
        private func each<T: FixedWidthInteger>(_: T.Type, of result: QueryResult, rows range: Range<Int>,
                                                nulls: UnsafeMutablePointer<UInt8>?,
                                                _ body: (_ index: Int, _ position: Int, _ value: T) throws -> Void) throws {
            var index = 0
            for position in range {
                if let bytes = result.unsafeBytes(atRow: position, column: column) {
                    try body(index, position, try ColumnDecoder.integer(T.self, from: bytes, column: column))
                } else {
                    nulls.unsafelyUnwrapped[index] = 1
                }
                index &+= 1
            }
        }
    }

    /// A binary integer column's value (`bytes`, nil for NULL); NULL or another size throws.
    @inline(__always)
    static func integer<T: FixedWidthInteger>(_: T.Type, from bytes: UnsafeRawBufferPointer?, column: Int) throws -> T {
        guard let bytes, bytes.count == MemoryLayout<T>.size else {
            throw PostgresDataError.invalidRequest("column \(column) holds \(bytes.map { "\($0.count) bytes" } ?? "NULL"), not a \(T.self)")
        }
        return T(bigEndian: bytes.loadUnaligned(as: T.self))
    }
}
