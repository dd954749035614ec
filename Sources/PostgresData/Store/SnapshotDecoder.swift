import Foundation
import PostgresClient

/// Decodes the rows of one result (selected with
/// ``PersistentStoreCoordinator/selectList(_:alias:)``) into snapshots of one entity, each
/// column with its ``ColumnDecoder``.
struct SnapshotDecoder: Sendable {
    private let entity: EntityDescription
    private let columns: [ColumnDecoder]
    /// For each property, the position in `columns` of its column, or −1 when it has none (a
    /// to-many relationship, which holds NULL).
    private let sources: [Int]
    /// The number of properties of the entity: values per row.
    let propertyCount: Int
    private let fast: Bool
    /// How ``DecodedRows`` of this result keep their values (for a result decoded column
    /// by column).
    private let layout: DecodedRows.Layout?

    init(entity: EntityDescription, result: QueryResult) {
        self.entity = entity
        self.propertyCount = entity.properties.count
        var sources = [Int](repeating: -1, count: entity.properties.count)
        for (position, index) in entity.columnIndices.enumerated() { sources[index] = position }
        self.sources = sources
        let described = result.columns
        let keyed = described.count == entity.columnIndices.count + 2 && described[0].type == .int8 && described[1].type == .xid
            && described.allSatisfy { $0.format == .binary }
        self.fast = keyed
        self.columns = keyed ? entity.columnDecodings.enumerated().map { position, decoding in
            switch decoding {
            case .foreignKey(let destination): ColumnDecoder(column: position + 2, of: result, as: .integer64, destination: destination)
            case .attribute(let type): ColumnDecoder(column: position + 2, of: result, as: type)
            }
        } : []
        let columns = self.columns
        self.layout = keyed ? DecodedRows.Layout(kinds: sources.map { $0 < 0 ? .absent : columns[$0].kind },
                                                 destinations: sources.map { $0 < 0 ? nil : columns[$0].destinationEntity }) : nil
    }

    /// True when no value of the result can fail to decode: every column has a decoding
    /// step of its own (no numeric, JSON or URL column parsed from its bytes).
    var decodesWithoutFailure: Bool {
        fast && columns.allSatisfy(\.decodesWithoutFailure)
    }

    /// How many rows share one ``DecodedRows``: few enough that an object
    /// kept from a large fetch keeps little else alive, enough that allocations are rare.
    static let chunkRows = 256

    /// Every row of `result`, each with its key.
    static func snapshots(of result: QueryResult, entity: EntityDescription) throws -> [(Int64, RowSnapshot)] {
        try SnapshotDecoder(entity: entity, result: result).snapshots(of: result, rows: 0..<result.count)
    }

    /// The rows `range` of `result`, each with its key; their values decoded into
    /// ``DecodedRows`` shared by up to ``chunkRows`` rows.
    func snapshots(of result: QueryResult, rows range: Range<Int>) throws -> [(Int64, RowSnapshot)] {
        try batch(of: result, rows: range).rows
    }

    /// The rows `range` of `result` as one batch: their keys and versions, their values
    /// decoded into ``DecodedRows`` shared by up to ``chunkRows`` rows.
    func batch(of result: QueryResult, rows range: Range<Int>) throws -> SnapshotBatch {
        guard fast else {
            return SnapshotBatch(rows: try range.map { try PersistentStoreCoordinator.decodeSnapshot(result[$0], entity: entity) })
        }
        var chunks: [DecodedRows] = []
        chunks.reserveCapacity((range.count + Self.chunkRows - 1) / Self.chunkRows)
        let (keys, versions) = try Self.identities(count: range.count) { rows, keys, versions in
            let start = range.lowerBound + rows.lowerBound
            chunks.append(try values(of: result, rows: start..<(start + rows.count), keys: keys, versions: versions))
        }
        return SnapshotBatch(keys: keys, versions: versions, chunks: chunks)
    }

    /// `count` keys and versions, written in place by `body` a chunk of ``chunkRows`` rows at
    /// a time (given the chunk's rows, and where their keys and versions go).
    static func identities(count: Int, _ body: (Range<Int>, UnsafeMutablePointer<Int64>, UnsafeMutablePointer<UInt32>) throws -> Void)
        rethrows -> (keys: [Int64], versions: [UInt32]) {
        var versions: [UInt32] = []
        // (Trivial values: a chunk that fails leaves nothing to destroy.)
        let keys = try [Int64](uninitializedCount: count) { keyBuffer, keyCount in
            versions = try [UInt32](uninitializedCount: count) { versionBuffer, versionCount in
                guard let keys = keyBuffer.baseAddress, let versions = versionBuffer.baseAddress else { return }
                var start = 0
                while start < count {
                    let end = min(count, start + chunkRows)
                    try body(start..<end, keys + start, versions + start)
                    keyCount = end
                    versionCount = end
                    start = end
                }
            }
        }
        return (keys, versions)
    }

    /// The values of the rows `range` of `result` in one ``DecodedRows``; with `keys` and
    /// `versions`, each row's key and version written there, in order. Only for a result this
    /// decoder decodes column by column: the keys, then the versions, then each column in
    /// turn, with a loop of its own (a few hundred rows' cells stay in the cache between
    /// columns, and no row pays for choosing each column's decoding).
    func values(of result: QueryResult, rows range: Range<Int>, keys: UnsafeMutablePointer<Int64>? = nil,
                versions: UnsafeMutablePointer<UInt32>? = nil) throws -> DecodedRows {
        guard let layout else {
            throw PostgresDataError.invalidRequest("the result's columns are not those of a snapshot of \(entity.name)")
        }
        let rows = DecodedRows(layout: layout, count: range.count)
        if let keys, let versions { try storeIdentities(ofRows: range, of: result, keys: keys, versions: versions) }
        for (property, source) in sources.enumerated() where source >= 0 {
            let (values, nulls) = rows.column(property)
            if let direct = columns[source].direct {
                try direct.store(result, rows: range, into: values, nulls: nulls)
            } else {
                let general = values.assumingMemoryBound(to: AttributeValue.self)
                for (index, position) in range.enumerated() { general[index] = try columns[source].value(result[position]) }
            }
        }
        return rows
    }

    /// Writes the keys and versions of the rows `range` of `result` at `keys` and
    /// `versions`, in order, read straight from their bytes, without making a ``Row``. Only
    /// for a result this decoder decodes column by column (``fast``: a binary `bigint` and
    /// `xid` first).
    func storeIdentities(ofRows range: Range<Int>, of result: QueryResult, keys: UnsafeMutablePointer<Int64>,
                         versions: UnsafeMutablePointer<UInt32>) throws {
        var index = 0
        for position in range {
            (keys + index).initialize(to: try ColumnDecoder.integer(Int64.self, from: result.unsafeBytes(atRow: position, column: 0), column: 0))
            index &+= 1
        }
        index = 0
        for position in range {
            (versions + index).initialize(to: try ColumnDecoder.integer(UInt32.self, from: result.unsafeBytes(atRow: position, column: 1), column: 1))
            index &+= 1
        }
    }
}
