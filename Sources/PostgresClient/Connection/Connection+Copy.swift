import CLibPQ

/// Writes rows for ``Connection/copyRows(into:schema:columns:_:)`` in COPY's binary format.
///
/// Rows are encoded into one buffer and handed to libpq 64 KiB at a time: less than a
/// socket's buffer holds, so the server reads one chunk while the next is encoded (with
/// chunks larger than the socket's buffer, it would wait for each one in turn).
public struct CopyWriter: ~Copyable {
    private var buffer = PostgresBuffer(capacity: CopyWriter.flushThreshold + 4096)
    private let columnCount: Int
    private let send: (UnsafeRawBufferPointer) throws -> Void
    private let isCanceled: () -> Bool
    /// Rows appended so far.
    public private(set) var rowCount = 0

    static let flushThreshold = 1 << 16

    init(columnCount: Int, send: @escaping (UnsafeRawBufferPointer) throws -> Void, isCanceled: @escaping () -> Bool) {
        self.columnCount = columnCount
        self.send = send
        self.isCanceled = isCanceled
        // Signature, flags, header extension length.
        buffer.writeBytes([0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00])
        buffer.writeInteger(Int32(0))
        buffer.writeInteger(Int32(0))
    }

    /// Appends one row; pass exactly one value per column, `nil` for NULL.
    public mutating func append<each Value: PostgresEncodable>(_ values: repeat each Value) throws {
        var count = 0
        for _ in repeat each values { count += 1 }
        guard count == columnCount else {
            throw PostgresError(.misuse, message: "row \(rowCount + 1) has \(count) values for \(columnCount) columns")
        }
        buffer.writeInteger(Int16(count))
        for value in repeat each values {
            try buffer.writeLengthPrefixed(value)
        }
        rowCount += 1
        if buffer.count >= Self.flushThreshold { try flush() }
    }

    /// Appends one row whose fields `encode` writes straight into the writer's buffer, each
    /// as a 32-bit length and its bytes (-1 for NULL): for layers that encode their own
    /// values, with no array per row. Pass the number of fields `encode` writes.
    public mutating func appendRow(fieldCount: Int, _ encode: (inout PostgresBuffer) throws -> Void) throws {
        guard fieldCount == columnCount else {
            throw PostgresError(.misuse, message: "row \(rowCount + 1) has \(fieldCount) values for \(columnCount) columns")
        }
        buffer.writeInteger(Int16(fieldCount))
        try encode(&buffer)
        rowCount += 1
        if buffer.count >= Self.flushThreshold { try flush() }
    }

    /// Appends rows already encoded in COPY's binary row format (per row: the field count
    /// as a 16-bit integer, then each field's 32-bit length and bytes, -1 for NULL).
    ///
    /// For layers that encode rows ahead of time, off the connection's thread.
    public mutating func appendEncodedRows(_ bytes: [UInt8], count: Int) throws {
        if buffer.count > 0 && buffer.count + bytes.count > Self.flushThreshold { try flush() }
        if bytes.count >= Self.flushThreshold {
            if isCanceled() {
                throw PostgresError(.canceled, message: "the COPY was canceled", sqlState: .queryCanceled)
            }
            try bytes.withUnsafeBytes { try send($0) }
        } else {
            buffer.writeBytes(bytes)
        }
        rowCount += count
    }

    mutating func flush() throws {
        if isCanceled() {
            throw PostgresError(.canceled, message: "the COPY was canceled", sqlState: .queryCanceled)
        }
        try buffer.bytes.withUnsafeBytes { try send($0) }
        buffer.removeAll(keepingCapacity: true)
    }

    consuming func finish() throws {
        buffer.writeInteger(Int16(-1))
        try flush()
    }
}

extension Connection {
    /// Bulk-loads rows with `COPY table (columns) FROM STDIN (FORMAT binary)`: the fastest
    /// way to write many rows. Returns the number of rows copied.
    ///
    /// ```swift
    /// let copied = try await connection.copyRows(into: "items", columns: ["name", "created_at"]) { writer in
    ///     for i in 0..<100_000 { try writer.append("Item \(i)", Date.now) }
    /// }
    /// ```
    ///
    /// The table and column names are quoted identifiers. If `write` throws, or the task is
    /// cancelled, the COPY is aborted and no row is written.
    @discardableResult
    public func copyRows(
        into table: String, schema: String? = nil, columns: [String],
        _ write: (inout CopyWriter) throws -> Void
    ) async throws -> Int {
        let target = (schema.map { quoteIdentifier($0) + "." } ?? "") + quoteIdentifier(table)
        let sql = "COPY \(target) (\(columns.map(quoteIdentifier).joined(separator: ", "))) FROM STDIN (FORMAT binary)"
        return try await withCancellation(timeout: nil) { token in
            let handle = try readyHandle()
            let started = try begin(token, statement: sql, parameters: 0)
            defer { end(token, statement: sql, since: started) }
            guard PQsendQuery(handle, sql) == 1 else { throw sendError(handle, statement: sql) }
            guard let start = PQgetResult(handle) else {
                throw PostgresError(.connectionLost, message: "the server sent no result", statement: sql)
            }
            guard PQresultStatus(start) == PGRES_COPY_IN else {
                let error = makeError(start, statement: sql, token: token)
                PQclear(start)
                while let result = PQgetResult(handle) { PQclear(result) }
                throw error
            }
            PQclear(start)
            var writer = CopyWriter(columnCount: columns.count, send: { bytes in
                self.noteSending(bytes.count)
                guard PQputCopyData(handle, bytes.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(bytes.count)) == 1 else {
                    throw PostgresError(.connectionLost, message: "could not send COPY data: \(Self.trimmed(PQerrorMessage(handle)))",
                                        statement: sql)
                }
            }, isCanceled: { token.cancellationReason != nil })
            var failure: Error?
            do {
                try write(&writer)
                try writer.finish()
                _ = PQputCopyEnd(handle, nil)
            } catch {
                failure = error
                _ = PQputCopyEnd(handle, "aborted by the client: \(error)")
            }
            let result: QueryResult
            do {
                result = try collectResult(handle, statement: sql, token: token)
            } catch {
                // The server's "COPY from stdin failed" only echoes the client's own failure.
                throw failure ?? error
            }
            if let failure { throw failure }
            return result.affectedRows
        }
    }
}
