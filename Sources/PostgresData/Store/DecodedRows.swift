import Foundation

/// Decoded rows of one entity, a few hundred of them (``SnapshotDecoder/chunkRows``): what a
/// fetch's snapshots (``RowSnapshot``) and the objects filled from them share.
///
/// Each property's values lie together in one typed column of a single allocation (a
/// `Double` in 8 bytes and a NULL flag, a `Bool` in one byte, a string in 16), and are made
/// ``AttributeValue``s only when read: a row of a string, a date, a double and a boolean
/// takes 35 bytes rather than four 24-byte enums, 60 MB less to fill and free for a fetch
/// of a million objects. Types without a column form of their own (UUIDs, data, decimals,
/// JSON, URLs) are kept as ``AttributeValue``s.
///
/// An array per row would cost a million allocations for a million rows; one allocation for
/// the whole result would keep it all alive for as long as any one of its objects lives.
///
/// Immutable once ``SnapshotDecoder`` has filled it, before anything else sees it, but for
/// the reading its faults wait under (``kept``), given once before any fault holds a row.
final class DecodedRows: @unchecked Sendable {
    /// The number of properties of the entity.
    let width: Int
    /// The number of rows.
    let count: Int
    let layout: Layout
    private let storage: UnsafeMutableRawPointer
    /// The layout's columns (``Layout/columns``), read without the array's bounds check:
    /// a getter of a fetched object reads its value through here.
    private let columns: UnsafePointer<Layout.Column>
    /// For the rows of a batch of a large fetch of faults, the reading their faults wait
    /// under (``KeptReading``), held by these rows (released in `deinit`); nil for other rows.
    /// Unmanaged so that a fault firing reads it without a retain and a release. Set once, by
    /// ``keep(under:)``, before any fault holds the rows.
    @exclusivity(unchecked) private(set) var kept: Unmanaged<KeptReading>?

    /// Rows of `layout`, their strings and general values set to NULL, their numbers not
    /// NULL, for ``SnapshotDecoder`` to fill.
    init(layout: Layout, count: Int) {
        self.layout = layout
        self.width = layout.kinds.count
        self.count = count
        storage = .allocate(byteCount: max(1, layout.rowBytes * count), alignment: 8)
        columns = UnsafePointer(layout.columns)
        for property in 0..<width {
            let (values, nulls) = column(property)
            switch layout.kinds[property] {
            case .string: values.initializeMemory(as: String?.self, repeating: nil, count: count)
            case .general: values.initializeMemory(as: AttributeValue.self, repeating: .null, count: count)
            case .boolean: values.initializeMemory(as: UInt8.self, repeating: Layout.nullBoolean, count: count)
            case .absent, .integer, .double, .float, .date, .key: break
            }
            nulls?.initialize(repeating: 0, count: count)
        }
    }

    /// Makes `reading` the one the faults of these rows wait under, before any of them holds
    /// a row (``EncodedRows``). Rows that have one keep it.
    func keep(under reading: KeptReading) {
        guard kept == nil else { return }
        kept = .passRetained(reading)
    }

    deinit {
        // Value by value: `move()` is the compiler's own destroy of the type (for a string, a
        // release only when it has a buffer), where `deinitialize(count:)` goes through the
        // runtime's generic array destroy, its value witnesses called for each element.
        for property in 0..<width {
            let values = column(property).values
            switch layout.kinds[property] {
            case .string:
                let strings = values.assumingMemoryBound(to: String?.self)
                for row in 0..<count { _ = (strings + row).move() }
            case .general:
                let general = values.assumingMemoryBound(to: AttributeValue.self)
                for row in 0..<count { _ = (general + row).move() }
            case .absent, .integer, .double, .float, .date, .key, .boolean: break
            }
        }
        storage.deallocate()
        kept?.release()
    }

    /// Where property `property`'s values begin, and its NULL flags (nil for a column that
    /// marks NULL in its values: strings, booleans, general values).
    func column(_ property: Int) -> (values: UnsafeMutableRawPointer, nulls: UnsafeMutablePointer<UInt8>?) {
        let column = self.column(at: property)
        return (storage + count &* column.values,
                column.nulls < 0 ? nil : (storage + count &* column.nulls).assumingMemoryBound(to: UInt8.self))
    }

    /// How property `property`'s column lies (it must be one of the entity's properties).
    @inline(__always)
    private func column(at property: Int) -> Layout.Column {
        precondition(property >= 0 && property < width, "property index \(property) out of range")
        return columns[property]
    }

    /// The value of property `property` in row `row`.
    @inline(__always)
    func value(row: Int, property: Int) -> AttributeValue {
        let column = self.column(at: property)
        let values = storage + count &* column.values
        if column.nulls >= 0, (storage + count &* column.nulls).load(fromByteOffset: row, as: UInt8.self) != 0 { return .null }
        switch column.kind {
        case .absent: return .null
        case .integer: return Int64.read(values, row: row).map(AttributeValue.integer) ?? .null
        case .double: return Double.read(values, row: row).map(AttributeValue.double) ?? .null
        case .float: return .float(values.load(fromByteOffset: row &* 4, as: Float.self))
        case .date: return Date.read(values, row: row).map(AttributeValue.date) ?? .null
        case .key:
            return Int64.read(values, row: row).map { key in
                .object(ManagedObjectID(entity: layout.destinations[property].unsafelyUnwrapped, primaryKey: key))
            } ?? .null
        case .boolean: return Bool.read(values, row: row).map(AttributeValue.boolean) ?? .null
        case .string: return String.read(values, row: row).map(AttributeValue.string) ?? .null
        case .general: return values.assumingMemoryBound(to: AttributeValue.self)[row]
        }
    }

    /// Property `property`'s value in row `row` as `Value`, read from its column with no
    /// ``AttributeValue`` made: nil when the column is not of that kind or holds NULL there
    /// (the caller then reads through ``value(row:property:)``).
    @inline(__always)
    func typedValue<Value: ColumnReadable>(_ type: Value.Type, row: Int, property: Int) -> Value? {
        let column = self.column(at: property)
        guard column.kind == Value.columnKind else { return nil }
        if column.nulls >= 0, (storage + count &* column.nulls).load(fromByteOffset: row, as: UInt8.self) != 0 { return nil }
        return Value.read(storage + count &* column.values, row: row)
    }

    /// The values of row `row`, one per property, in an array of their own.
    func values(at row: Int) -> PropertyValues {
        PropertyValues((0..<width).map { value(row: row, property: $0) })
    }

    /// How the rows of one entity's results lie in memory: a column per property, in order
    /// of alignment (8-byte values first, then 4, then 1, then the NULL flags) so that each
    /// column of any number of rows starts aligned. (Unchecked `Sendable`: its column table is
    /// written in `init` only.)
    final class Layout: @unchecked Sendable {
        /// How a column keeps its values.
        enum Kind: Sendable {
            /// No column (a to-many relationship): every value NULL.
            case absent
            /// `Int64`, with NULL flags.
            case integer
            case double
            case float
            /// Seconds since the reference date, as `Date` keeps them.
            case date
            /// A to-one relationship's destination key.
            case key
            /// 0, 1, or ``Layout/nullBoolean``.
            case boolean
            /// `String?`.
            case string
            /// ``AttributeValue``.
            case general

            /// Bytes per value, and whether NULL needs a flag byte besides.
            var size: (bytes: Int, flagged: Bool) {
                switch self {
                case .absent: (0, false)
                case .integer, .double, .date, .key: (8, true)
                case .float: (4, true)
                case .boolean: (1, false)
                case .string: (MemoryLayout<String?>.stride, false)
                case .general: (MemoryLayout<AttributeValue>.stride, false)
                }
            }

            var alignment: Int {
                switch self {
                case .absent, .boolean: 1
                case .float: 4
                case .integer, .double, .date, .key: 8
                case .string: MemoryLayout<String?>.alignment
                case .general: MemoryLayout<AttributeValue>.alignment
                }
            }
        }

        static let nullBoolean: UInt8 = 2

        let kinds: [Kind]
        /// For a ``Kind/key`` column, the destination entity.
        let destinations: [EntityDescription?]
        /// Bytes per row.
        let rowBytes: Int
        /// Per property, its kind and where its values and NULL flags begin: one read for a
        /// value's getter. Allocated with the layout, never changed.
        fileprivate let columns: UnsafeMutablePointer<Column>

        /// How one property's column lies: its kind, where its values begin and where its NULL
        /// flags begin (−1: none), in bytes per row.
        struct Column {
            let kind: Kind
            let values: Int
            let nulls: Int
        }

        init(kinds: [Kind], destinations: [EntityDescription?]) {
            self.kinds = kinds
            self.destinations = destinations
            var valueOffsets = [Int](repeating: 0, count: kinds.count)
            var nullOffsets = [Int](repeating: -1, count: kinds.count)
            var offset = 0
            // Most aligned first: every column of any number of rows then starts aligned.
            for alignment in [8, 4, 1] {
                for (property, kind) in kinds.enumerated() where kind.size.bytes > 0 && kind.alignment == alignment {
                    valueOffsets[property] = offset
                    offset += kind.size.bytes
                }
            }
            for (property, kind) in kinds.enumerated() where kind.size.flagged {
                nullOffsets[property] = offset
                offset += 1
            }
            self.rowBytes = offset
            columns = .allocate(capacity: max(1, kinds.count))
            for property in kinds.indices {
                (columns + property).initialize(to: Column(kind: kinds[property], values: valueOffsets[property],
                                                           nulls: nullOffsets[property]))
            }
        }

        deinit {
            columns.deallocate()
        }
    }
}

/// A type ``DecodedRows`` hands out straight from its column (``DecodedRows/typedValue(_:row:property:)``).
protocol ColumnReadable {
    static var columnKind: DecodedRows.Layout.Kind { get }
    /// The value in row `row` of a column of ``columnKind`` starting at `values`; nil for NULL.
    static func read(_ values: UnsafeMutableRawPointer, row: Int) -> Self?
}

extension String: ColumnReadable {
    static var columnKind: DecodedRows.Layout.Kind { .string }
    @inline(__always)
    static func read(_ values: UnsafeMutableRawPointer, row: Int) -> String? {
        values.assumingMemoryBound(to: String?.self)[row]
    }
}

extension Int64: ColumnReadable {
    static var columnKind: DecodedRows.Layout.Kind { .integer }
    @inline(__always)
    static func read(_ values: UnsafeMutableRawPointer, row: Int) -> Int64? {
        values.load(fromByteOffset: row &* 8, as: Int64.self)
    }
}

extension Double: ColumnReadable {
    static var columnKind: DecodedRows.Layout.Kind { .double }
    @inline(__always)
    static func read(_ values: UnsafeMutableRawPointer, row: Int) -> Double? {
        values.load(fromByteOffset: row &* 8, as: Double.self)
    }
}

extension Date: ColumnReadable {
    static var columnKind: DecodedRows.Layout.Kind { .date }
    @inline(__always)
    static func read(_ values: UnsafeMutableRawPointer, row: Int) -> Date? {
        Date(timeIntervalSinceReferenceDate: values.load(fromByteOffset: row &* 8, as: Double.self))
    }
}

extension Bool: ColumnReadable {
    static var columnKind: DecodedRows.Layout.Kind { .boolean }
    @inline(__always)
    static func read(_ values: UnsafeMutableRawPointer, row: Int) -> Bool? {
        let flag = values.load(fromByteOffset: row, as: UInt8.self)
        return flag == DecodedRows.Layout.nullBoolean ? nil : flag != 0
    }
}
