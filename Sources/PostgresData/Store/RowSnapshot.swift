/// The values of one row as the store last read or wrote them, with the row version
/// (`xmin`) they belong to. Immutable; its values array is shared (copy on write) by the
/// row cache, every context holding the row, and the objects filled from it, so a fetched
/// row costs one allocation.
///
/// A row fetched for a fault of an asynchronous fetch stays *encoded*: libpq's binary bytes
/// in the result it came in (``EncodedRows``), decoded when the fault fires — a fetch of a
/// million faults then decodes only keys and versions, as Core Data's row cache keeps
/// SQLite's rows until asked. Objects always hold decoded snapshots (``decoded()``).
struct RowSnapshot: Sendable {
    // Two plain references rather than an enum of the two forms: snapshots are copied by
    // the million, and the enum's copies ran through outlined switch code in profiles (the
    // difference was too small to show in the benchmark).
    private let decodedValues: [AttributeValue]
    private let encodedRows: EncodedRows?
    private let row: Int32
    /// The transaction ID that wrote the row: a save's `UPDATE … WHERE xmin = version`
    /// detects any write since.
    let version: UInt32

    init(values: [AttributeValue], version: UInt32) {
        self.decodedValues = values
        self.encodedRows = nil
        self.row = 0
        self.version = version
    }

    init(row: Int, of rows: EncodedRows, version: UInt32) {
        self.decodedValues = []
        self.encodedRows = rows
        self.row = Int32(row)
        self.version = version
    }

    /// One value per property of the entity (relationships loaded on demand hold `.null`);
    /// an encoded row is decoded on every call: keep ``decoded()`` instead.
    var values: [AttributeValue] {
        guard let encodedRows else { return decodedValues }
        return encodedRows.values(at: Int(row))
    }

    var isEncoded: Bool { encodedRows != nil }

    /// For a row kept encoded, the generation of the fetch it came in (``RowCache/Reader``).
    var readerGeneration: UInt64? { encodedRows?.reader.generation }

    /// The same row with its values decoded.
    func decoded() -> RowSnapshot {
        isEncoded ? RowSnapshot(values: values, version: version) : self
    }
}
