/// One batch of a large fetch of faults as it reaches registration: the rows its faults
/// share (``EncodedRows``), and the rows' keys and versions, which only registration reads.
///
/// A fault keeps its row's version in its snapshot, so the batch's arrays are freed once it
/// is registered: a million faults keep 12 MB less, and the next batch's arrays take the
/// memory of this one's rather than memory the system has to provide anew.
struct EncodedBatch: Sendable {
    let rows: EncodedRows
    /// The rows' primary keys and versions, in the result's order.
    private let keys: [Int64]
    private let versions: [UInt32]

    init(rows: EncodedRows, keys: [Int64], versions: [UInt32]) {
        self.rows = rows
        self.keys = keys
        self.versions = versions
    }

    var count: Int { keys.count }

    /// The primary key of row `index`.
    func key(at index: Int) -> Int64 { keys[index] }

    /// The row a fault of row `index` keeps until it fires (``EncodedRows/pendingSnapshot(at:version:)``).
    func snapshot(at index: Int) -> RowSnapshot {
        rows.pendingSnapshot(at: index, version: versions[index])
    }
}
