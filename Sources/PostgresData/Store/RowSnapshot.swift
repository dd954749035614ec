/// The values of one row as the store last read or wrote them, with the row version
/// (`xmin`) they belong to. Immutable and shared by the row cache and every context.
final class RowSnapshot: Sendable {
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
