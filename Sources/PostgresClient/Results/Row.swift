import CLibPQ

/// One row of a ``QueryResult``; values are decoded when asked for, by index or by name.
///
/// ```swift
/// for row in try await connection.query("SELECT id, name, created_at FROM items") {
///     let (id, name, createdAt) = try row.decode((Int64, String, Date).self)
///     let done = try row.decode(Bool.self, named: "done")
/// }
/// ```
public struct Row: @unchecked Sendable {  // `handle` belongs to the immutable `storage`.
    @usableFromInline let storage: ResultStorage
    @usableFromInline let handle: OpaquePointer
    @usableFromInline let row: Int32

    @usableFromInline
    init(storage: ResultStorage, handle: OpaquePointer, row: Int32) {
        self.storage = storage
        self.handle = handle
        self.row = row
    }

    /// The number of columns.
    public var count: Int { storage.columns.count }

    /// True when the column holds SQL NULL.
    public func isNull(at column: Int) -> Bool {
        PQgetisnull(handle, row, Int32(column)) != 0
    }

    /// Decodes the value of the column at `column` (0-based).
    ///
    /// Inlinable, so that it is specialized for `Value` in the caller: the per-row path
    /// then runs no generic dispatch.
    @inlinable
    public func decode<Value: PostgresDecodable>(_ type: Value.Type = Value.self, at column: Int) throws -> Value {
        guard column >= 0 && column < storage.columns.count else { throw columnOutOfRange(column) }
        let index = Int32(column)
        do {
            // NULL has a length of 0: a longer value needs no third call to libpq.
            let length = Int(PQgetlength(handle, row, index))
            if length == 0 && PQgetisnull(handle, row, index) != 0 { return try Value.decodeNull() }
            let cell = PostgresCell(bytes: UnsafeRawBufferPointer(start: PQgetvalue(handle, row, index), count: length),
                                    type: storage.columns.types[column], format: storage.columns.formats[column])
            return try Value.decode(from: cell)
        } catch {
            throw decodingError(error, column: column, as: Value.self)
        }
    }

    /// Decodes the value of the column called `name`.
    public func decode<Value: PostgresDecodable>(_ type: Value.Type = Value.self, named name: String) throws -> Value {
        guard let column = storage.columns.index(of: name) else {
            throw PostgresError(
                .misuse, message: "the result has no column \"\(name)\"",
                hint: "Its columns are \(storage.columns.names.map { "\"\($0)\"" }.joined(separator: ", ")).",
                statement: storage.statement)
        }
        return try decode(Value.self, at: column)
    }

    /// Decodes the first columns as a tuple: `row.decode((Int64, String?).self)`.
    @inlinable
    public func decode<each Value: PostgresDecodable>(_ types: (repeat each Value).Type) throws -> (repeat each Value) {
        var column = 0
        return (repeat try decodeNext((each Value).self, column: &column))
    }

    @inlinable @inline(__always)
    func decodeNext<Value: PostgresDecodable>(_ type: Value.Type, column: inout Int) throws -> Value {
        defer { column += 1 }
        return try decode(Value.self, at: column)
    }

    @usableFromInline
    func columnOutOfRange(_ column: Int) -> PostgresError {
        PostgresError(.misuse, message: "column index \(column) is out of range: the result has \(storage.columns.count) columns",
                      statement: storage.statement)
    }

    /// The raw bytes of a column, or nil for NULL, valid as long as the row's result lives.
    ///
    /// Inlinable, so that a decoder's body is inlined into it: reading a million rows' cells
    /// then makes no closure call per cell. A value of one byte or more is not NULL (libpq
    /// gives NULL a length of 0), so only an empty one costs a third call to libpq.
    @inlinable
    public func withUnsafeBytes<R>(at column: Int, _ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        try body(Self.unsafeBytes(of: handle, row: row, column: column))
    }

    /// The cell of `handle` at `row` and `column`, or nil for NULL: two calls to libpq, three
    /// for an empty value.
    @inlinable @inline(__always)
    static func unsafeBytes(of handle: OpaquePointer, row: Int32, column: Int) -> UnsafeRawBufferPointer? {
        let index = Int32(column)
        let length = Int(PQgetlength(handle, row, index))
        if length == 0 && PQgetisnull(handle, row, index) != 0 { return nil }
        return UnsafeRawBufferPointer(start: PQgetvalue(handle, row, index), count: length)
    }

    @usableFromInline
    func decodingError<Value>(_ error: PostgresDecodingError, column: Int, as: Value.Type) -> PostgresError {
        let name = storage.columns.names[column]
        let type = storage.columns.types[column]
        let message: String
        var hint: String?
        switch error {
        case .typeMismatch:
            message = "column \"\(name)\" is of type \(type), which cannot be decoded as \(Value.self)"
            hint = "Decode it as a Swift type that matches \(type), or cast it in SQL."
        case .unexpectedNull:
            message = "column \"\(name)\" (\(type)) is NULL, which cannot be decoded as \(Value.self)"
            hint = "Decode it as \(Value.self)? to accept NULL."
        case .malformed(let reason):
            message = "column \"\(name)\" (\(type)) holds a value that cannot be decoded as \(Value.self): \(reason)"
        case .outOfRange(let reason):
            message = "column \"\(name)\" (\(type)) does not fit in \(Value.self): \(reason)"
        }
        var result = PostgresError(.decoding, message: message, hint: hint, statement: storage.statement)
        result.columnName = name
        return result
    }
}
