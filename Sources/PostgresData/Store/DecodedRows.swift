/// Decoded rows of one entity, their values one row after the other in one array: what a
/// fetch's snapshots (``RowSnapshot``) and the objects filled from them share.
///
/// Rows are decoded a few hundred at a time (``SnapshotDecoder/chunkRows``): an array per
/// row would cost a million allocations for a million rows, one array for the whole result
/// would keep it all alive for as long as any one of its objects lives.
final class DecodedRows: Sendable {
    /// The values, `width` per row.
    let values: [AttributeValue]
    /// The number of properties of the entity.
    let width: Int

    init(values: [AttributeValue], width: Int) {
        self.values = values
        self.width = width
    }

    /// The values of row `row`, without a copy.
    @inline(__always)
    func values(at row: Int) -> PropertyValues {
        PropertyValues(row: row * width, count: width, of: values)
    }
}
