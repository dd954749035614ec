import PostgresClient

/// The rows of one result kept as libpq received them (binary), for snapshots decoded only
/// when needed (``RowSnapshot``). Shared by the snapshots of its rows; the result is freed
/// with the last of them.
///
/// Only results whose every column has a decoding step that cannot fail are kept encoded
/// (``SnapshotDecoder/decodesWithoutFailure``): a row decoded late, when a fault fires, has no
/// caller to report an error to.
final class EncodedRows: Sendable {
    private let result: QueryResult
    private let decoder: SnapshotDecoder

    init(_ result: QueryResult, decoder: SnapshotDecoder) {
        self.result = result
        self.decoder = decoder
    }

    func values(at row: Int) -> [AttributeValue] {
        do {
            return try decoder.values(of: result[row])
        } catch {
            preconditionFailure("a row kept encoded could not be decoded: \(error)")
        }
    }
}
