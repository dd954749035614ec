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
    }

    var count: Int { keys.count }

    /// The snapshot of row `index`, still encoded.
    func snapshot(at index: Int) -> RowSnapshot {
        RowSnapshot(row: index, of: self, version: versions[index])
    }

    func values(at row: Int) -> [AttributeValue] {
        do {
            return try decoder.values(of: result[row])
        } catch {
            preconditionFailure("a row kept encoded could not be decoded: \(error)")
        }
    }
}
