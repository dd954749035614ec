import Foundation
import PostgresClient

/// Decodes the rows of one result (selected with
/// ``PersistentStoreCoordinator/selectList(_:alias:)``) into snapshots of one entity.
///
/// The column types are checked once per result, not once per value: each column gets a
/// decoding step that reads libpq's binary bytes directly, and only types without one
/// (numeric, JSON, URLs, or a result in text format) go through the general
/// ``ValueCoding/decode(_:at:as:)``.
struct SnapshotDecoder: Sendable {
    private enum Step: Sendable {
        case int16, int32, int64, float32, float64, text, bool, timestamp, uuid, bytes
        case general(AttributeType)
        case foreignKey(EntityDescription)
    }

    private let entity: EntityDescription
    private let steps: [Step]
    private let indices: [Int]
    private let propertyCount: Int
    private let fast: Bool

    init(entity: EntityDescription, result: QueryResult) {
        self.entity = entity
        self.indices = entity.columnIndices
        self.propertyCount = entity.properties.count
        let columns = result.columns
        let keyed = columns.count == indices.count + 2 && columns[0].type == .int8 && columns[1].type == .xid
            && columns.allSatisfy { $0.format == .binary }
        self.fast = keyed
        var steps: [Step] = []
        for (position, decoding) in entity.columnDecodings.enumerated() {
            guard keyed else { steps.append(.general(.string)); continue }
            let type = columns[position + 2].type
            switch decoding {
            case .foreignKey(let destination):
                steps.append(type == .int8 ? .foreignKey(destination) : .general(.integer64))
            case .attribute(let attributeType):
                steps.append(Self.step(for: attributeType, column: type))
            }
        }
        self.steps = steps
    }

    private static func step(for attribute: AttributeType, column: PostgresType) -> Step {
        switch (attribute, column) {
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
        default: .general(attribute)
        }
    }

    /// True when no value of the result can fail to decode: every column has a decoding
    /// step of its own (no numeric, JSON or URL column parsed from its bytes).
    var decodesWithoutFailure: Bool {
        fast && steps.allSatisfy { if case .general = $0 { false } else { true } }
    }

    /// Every row of `result`, each with its key.
    static func snapshots(of result: QueryResult, entity: EntityDescription) throws -> [(Int64, RowSnapshot)] {
        let decoder = SnapshotDecoder(entity: entity, result: result)
        var rows: [(Int64, RowSnapshot)] = []
        rows.reserveCapacity(result.count)
        for row in result { rows.append(try decoder.decode(row)) }
        return rows
    }

    func decode(_ row: Row) throws -> (Int64, RowSnapshot) {
        guard fast else { return try PersistentStoreCoordinator.decodeSnapshot(row, entity: entity) }
        let (key, version) = try identity(of: row)
        return (key, RowSnapshot(values: try values(of: row), version: version))
    }

    /// The row's key and version.
    @inline(__always)
    func identity(of row: Row) throws -> (Int64, UInt32) {
        (try row.decode(Int64.self, at: 0), try row.decode(TransactionID.self, at: 1).rawValue)
    }

    /// The row's values, one per property.
    func values(of row: Row) throws -> [AttributeValue] {
        guard fast else { return try PersistentStoreCoordinator.decodeSnapshot(row, entity: entity).1.values }
        return try [AttributeValue](unsafeUninitializedCapacity: propertyCount) { buffer, count in
            // Properties without a column (to-many relationships) hold NULL.
            buffer.initialize(repeating: .null)
            count = buffer.count
            for position in 0..<steps.count {
                buffer[indices[position]] = try value(row, column: position + 2, steps[position])
            }
        }
    }

    @inline(__always)
    private func value(_ row: Row, column: Int, _ step: Step) throws -> AttributeValue {
        if case .general(let type) = step { return try ValueCoding.decode(row, at: column, as: type) }
        return try row.withUnsafeBytes(at: column) { bytes throws -> AttributeValue in
            guard let bytes else { return .null }
            func integer<T: FixedWidthInteger>(_: T.Type) throws -> T {
                guard bytes.count == MemoryLayout<T>.size else {
                    throw PostgresDataError.invalidRequest("column \(column) holds \(bytes.count) bytes, not a \(T.self)")
                }
                return T(bigEndian: bytes.loadUnaligned(as: T.self))
            }
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
            case .foreignKey(let destination): return .object(ManagedObjectID(entity: destination, primaryKey: try integer(Int64.self)))
            case .general: preconditionFailure("handled above")
            }
        }
    }
}
