import CLibPQ

/// How a ``RowStream`` reads a large result.
public enum StreamMode: Sendable, Hashable {
    /// A server-side cursor: `DECLARE … NO SCROLL CURSOR`, then `FETCH FORWARD batchSize`
    /// per batch. Runs inside the caller's transaction, or in a read-only one it opens
    /// and closes itself. Memory holds one batch; the server holds the rest.
    case cursor(batchSize: Int)
    /// libpq's single-row mode: one statement whose rows are read as they arrive and
    /// handed over `batchSize` at a time. No transaction needed, but the connection runs
    /// nothing else until the stream ends.
    case singleRow(batchSize: Int)

    var batchSize: Int {
        switch self {
        case .cursor(let size), .singleRow(let size): max(1, size)
        }
    }
}
