/// The values of one row as the store last read or wrote them, with the row version
/// (`xmin`) they belong to. Immutable; its values array is shared (copy on write) by the
/// row cache, every context holding the row, and the objects filled from it, so a fetched
/// row costs one allocation.
///
/// A row fetched for a fault may stay *encoded*: libpq's binary bytes in the result it came
/// in (``EncodedRows``), decoded when the fault fires — a fetch of a million faults then
/// decodes only keys and versions, as Core Data's row cache keeps SQLite's rows until asked.
/// Objects always hold decoded snapshots (``decoded()``).
struct RowSnapshot: Sendable {
    private enum Storage: Sendable {
        case decoded([AttributeValue])
        case encoded(EncodedRows, row: Int)
    }

    private let storage: Storage
    /// The transaction ID that wrote the row: a save's `UPDATE … WHERE xmin = version`
    /// detects any write since.
    let version: UInt32

    init(values: [AttributeValue], version: UInt32) {
        self.storage = .decoded(values)
        self.version = version
    }

    init(row: Int, of rows: EncodedRows, version: UInt32) {
        self.storage = .encoded(rows, row: row)
        self.version = version
    }

    /// One value per property of the entity (relationships loaded on demand hold `.null`);
    /// an encoded row is decoded on every call: keep ``decoded()`` instead.
    var values: [AttributeValue] {
        switch storage {
        case .decoded(let values): values
        case .encoded(let rows, let row): rows.values(at: row)
        }
    }

    var isEncoded: Bool {
        if case .encoded = storage { return true }
        return false
    }

    /// The same row with its values decoded.
    func decoded() -> RowSnapshot {
        isEncoded ? RowSnapshot(values: values, version: version) : self
    }
}
