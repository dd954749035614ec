import CLibPQ

/// The rows of a statement (or of one batch of a stream), read straight from libpq's memory.
///
/// A `QueryResult` is a random-access collection of ``Row``; rows decode their values on
/// access, so walking a result allocates nothing per row beyond the values themselves.
/// It is immutable and `Sendable`: libpq results may be read from any thread.
public struct QueryResult: Sendable, RandomAccessCollection {
    @usableFromInline let storage: ResultStorage

    init(storage: ResultStorage) { self.storage = storage }

    /// The result's columns, in order.
    public var columns: [Column] {
        (0..<storage.columns.count).map {
            Column(name: storage.columns.names[$0], type: storage.columns.types[$0], format: storage.columns.formats[$0])
        }
    }

    /// The command tag the server sent (`SELECT 3`, `UPDATE 10`, `INSERT 0 1`).
    public var commandTag: String { storage.commandTag }

    /// Rows inserted, updated, deleted, copied or fetched, from the command tag.
    public var affectedRows: Int { storage.affectedRows }

    @inlinable public var startIndex: Int { 0 }
    @inlinable public var endIndex: Int { storage.rowCount }

    /// The row at `position`. Inlinable: a loop over a million rows then makes no call per row.
    @inlinable
    public subscript(position: Int) -> Row {
        precondition(position >= 0 && position < storage.rowCount, "row index \(position) out of range")
        if storage.rowsPerHandle {
            return Row(storage: storage, handle: storage.handles[position], row: 0)
        }
        return Row(storage: storage, handle: storage.firstHandle.unsafelyUnwrapped, row: Int32(position))
    }

    /// The raw bytes of the cell at `column` of row `position`, or nil for NULL: what
    /// ``Row/withUnsafeBytes(at:_:)`` gives, without making the ``Row`` or calling a closure.
    ///
    /// For a decoder that reads every cell of a large result: a `Row` holds the result, so
    /// making one per row changes the result's reference count twice per row. The bytes are
    /// libpq's, valid only as long as the result lives: keep the result until you are done
    /// with them (`withExtendedLifetime(result)`), and never write through them.
    @inlinable @inline(__always)
    public func unsafeBytes(atRow position: Int, column: Int) -> UnsafeRawBufferPointer? {
        precondition(position >= 0 && position < storage.rowCount, "row index \(position) out of range")
        if storage.rowsPerHandle {
            return Row.unsafeBytes(of: storage.handles[position], row: 0, column: column)
        }
        return Row.unsafeBytes(of: storage.firstHandle.unsafelyUnwrapped, row: Int32(position), column: column)
    }

    /// One column of a result.
    public struct Column: Sendable, Hashable {
        public var name: String
        public var type: PostgresType
        public var format: PostgresFormat
    }
}

/// Owns the `PGresult`s behind a ``QueryResult``: one for a plain result, one per row for
/// a batch read in single-row mode.
@usableFromInline
final class ResultStorage: @unchecked Sendable {
    @usableFromInline let handles: [OpaquePointer]
    /// `handles[0]` for a plain result, read without touching the array (which a loop
    /// retains per read); nil for single-row results, which are never read through it.
    @usableFromInline let firstHandle: OpaquePointer?
    @usableFromInline let rowsPerHandle: Bool
    @usableFromInline let rowCount: Int
    @usableFromInline let columns: ColumnSet
    @usableFromInline let statement: String

    init(handle: OpaquePointer, statement: String) {
        handles = [handle]
        firstHandle = handle
        rowsPerHandle = false
        rowCount = Int(PQntuples(handle))
        columns = ColumnSet(handle)
        self.statement = statement
    }

    /// Takes ownership of single-row results that share their columns.
    init(singleRows: [OpaquePointer], columns: ColumnSet, statement: String) {
        handles = singleRows
        firstHandle = nil
        rowsPerHandle = true
        rowCount = singleRows.count
        self.columns = columns
        self.statement = statement
    }

    deinit {
        for handle in handles { PQclear(handle) }
    }

    var commandTag: String {
        guard !rowsPerHandle, let tag = PQcmdStatus(handles[0]) else { return rowsPerHandle ? "SELECT \(rowCount)" : "" }
        return String(cString: tag)
    }

    var affectedRows: Int {
        if rowsPerHandle { return rowCount }
        guard let text = PQcmdTuples(handles[0]), let value = Int(String(cString: text)) else { return rowCount }
        return value
    }
}

/// Names, types and formats of a result's columns, read once per result.
@usableFromInline
final class ColumnSet: @unchecked Sendable {
    @usableFromInline let count: Int
    let names: [String]
    @usableFromInline let types: [PostgresType]
    @usableFromInline let formats: [PostgresFormat]

    init(_ handle: OpaquePointer) {
        count = Int(PQnfields(handle))
        names = (0..<Int32(count)).map { String(cString: PQfname(handle, $0)) }
        types = (0..<Int32(count)).map { PostgresType(oid: PQftype(handle, $0)) }
        formats = (0..<Int32(count)).map { PostgresFormat(rawValue: PQfformat(handle, $0)) ?? .text }
    }

    func index(of name: String) -> Int? {
        names.firstIndex(of: name)
    }
}
