/// The statements of a cursor stream (``StreamMode/cursor(batchSize:)``), planned without a
/// connection: `DECLARE … NO SCROLL CURSOR FOR` the query, `FETCH FORWARD n` per batch, and
/// `CLOSE` when the stream ends inside a transaction it did not open.
///
/// The cursor's name is the library's (`pd_cursor_<n>`, unique on its connection), never the
/// caller's; the query's values stay bind parameters of the `DECLARE`.
struct CursorStatements: Equatable {
    /// The cursor's name, an identifier that needs no quoting.
    let name: String
    /// Rows per `FETCH`, at least 1.
    let batchSize: Int

    init(number: Int, batchSize: Int) {
        self.name = "pd_cursor_\(number)"
        self.batchSize = max(1, batchSize)
    }

    /// Opens the cursor over `query` (its bind values go with this statement).
    func declare(_ query: String) -> String { "DECLARE \(name) NO SCROLL CURSOR FOR \(query)" }

    /// Reads the next batch.
    var fetch: String { "FETCH FORWARD \(batchSize) FROM \(name)" }

    /// Closes the cursor early.
    var close: String { "CLOSE \(name)" }

    /// True when a batch of `count` rows is the last one (fewer rows than asked for).
    func isLast(_ count: Int) -> Bool { count < batchSize }
}
