import PostgresClient

/// The rows of one result kept as libpq received them (binary), for snapshots decoded only
/// when needed (``RowSnapshot``): a batch of an asynchronous fetch of faults. Shared by the
/// snapshots of its rows; the result is freed with the last of them.
///
/// Only the keys and versions are read at once. Only results whose every column has a
/// decoding step that cannot fail are kept encoded (``SnapshotDecoder/decodesWithoutFailure``):
/// a row decoded late, when a fault fires, has no caller to report an error to.
final class EncodedRows: Sendable {
    private let result: QueryResult
    private let decoder: SnapshotDecoder
    /// The fetch the rows came in: while it lives, the row cache keeps the rows that change.
    let reader: RowCache.Reader
    /// The rows' primary keys and versions, in the result's order.
    let keys: [Int64]
    private let versions: [UInt32]
    /// The rows decoded so far, ``SnapshotDecoder/chunkRows`` at a time, the first time one
    /// of a chunk's rows is asked for: the faults of a chunk then share one array of values,
    /// as the objects of an ordinary fetch do.
    private let chunks: Locked<[DecodedRows?]>

    /// Reads the keys and versions of `result`; nil when a column could fail to decode.
    init?(_ result: QueryResult, decoder: SnapshotDecoder, reader: RowCache.Reader) throws {
        guard decoder.decodesWithoutFailure else { return nil }
        self.result = result
        self.decoder = decoder
        self.reader = reader
        var keys: [Int64] = []
        var versions: [UInt32] = []
        keys.reserveCapacity(result.count)
        versions.reserveCapacity(result.count)
        for row in result {
            let (key, version) = try decoder.identity(of: row)
            keys.append(key)
            versions.append(version)
        }
        self.keys = keys
        self.versions = versions
        self.chunks = Locked(Array(repeating: nil, count: (keys.count + SnapshotDecoder.chunkRows - 1) / SnapshotDecoder.chunkRows))
    }

    var count: Int { keys.count }

    /// The snapshot of row `index`, still encoded.
    func snapshot(at index: Int) -> RowSnapshot {
        RowSnapshot(row: index, of: self, version: versions[index])
    }

    /// The snapshot of row `index`, decoded: a row of its chunk's ``DecodedRows``; nil when
    /// the chunk does not decode (a value of the wrong size from the server): the fault then
    /// reads its row from the database, whose error it reports.
    func decodedSnapshot(at index: Int) -> RowSnapshot? {
        let chunk = index / SnapshotDecoder.chunkRows
        let start = chunk * SnapshotDecoder.chunkRows
        let rows = chunks.withLock { chunks -> DecodedRows? in
            if let rows = chunks[chunk] { return rows }
            let rows = try? decoder.values(of: result, rows: start..<min(count, start + SnapshotDecoder.chunkRows))
            chunks[chunk] = rows
            return rows
        }
        return rows.map { RowSnapshot(row: index - start, of: $0, version: versions[index]) }
    }

    /// The values of row `index`; NULLs when it does not decode (only faults read these rows,
    /// through ``decodedSnapshot(at:)``, which tells).
    func values(at index: Int) -> PropertyValues {
        decodedSnapshot(at: index)?.values ?? PropertyValues([AttributeValue](repeating: .null, count: decoder.propertyCount))
    }
}
