/// The values of one row as the store last read or wrote them, with the row version
/// (`xmin`) they belong to. Immutable; its values array is shared (copy on write) by the
/// row cache, every context holding the row, and the objects filled from it, so a fetched
/// row costs one allocation.
struct RowSnapshot: Sendable {
    /// One value per property of the entity (relationships loaded on demand hold `.null`).
    let values: [AttributeValue]
    /// The transaction ID that wrote the row: a save's `UPDATE … WHERE xmin = version`
    /// detects any write since.
    let version: UInt32

    init(values: [AttributeValue], version: UInt32) {
        self.values = values
        self.version = version
    }
}
