import PostgresClient
import PostgresDataTesting
import Testing

@Suite("A result's cells read as raw bytes without making rows")
struct ResultBytesTests {
    /// libpq's bytes of each cell of `result`, row by row: nil for NULL.
    func cells(of result: QueryResult) -> [[[UInt8]?]] {
        result.indices.map { position in
            (0..<result.columns.count).map { column in result.unsafeBytes(atRow: position, column: column).map { Array($0) } }
        }
    }

    @Test func bytesOfAPlainResultMatchTheRowsAndTellNullFromEmpty() async throws {
        try await withConnection { connection async throws in
            let result = try await connection.query("""
                SELECT * FROM (VALUES (1::int8, 'abc'::text), (2, ''), (3, NULL)) AS v(k, t) ORDER BY k
                """)
            let cells = cells(of: result)
            #expect(cells.map { $0[0] } == [[0, 0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0, 2], [0, 0, 0, 0, 0, 0, 0, 3]])
            #expect(cells.map { $0[1] } == [Array("abc".utf8), [], nil])
            // The same bytes as each row's.
            for (position, row) in result.enumerated() {
                #expect(row.withUnsafeBytes(at: 1) { $0.map { Array($0) } } == cells[position][1])
            }
        }
    }

    @Test func bytesOfASingleRowStreamMatchTheRows() async throws {
        try await withConnection { connection async throws in
            var keys: [Int64] = []
            for try await batch in try connection.stream("SELECT g::int8, CASE WHEN g % 2 = 0 THEN NULL ELSE g::text END FROM generate_series(1, 5) g",
                                                          mode: .singleRow(batchSize: 2)) {
                for (position, row) in batch.enumerated() {
                    let key = try #require(batch.unsafeBytes(atRow: position, column: 0))
                    keys.append(Int64(bigEndian: key.loadUnaligned(as: Int64.self)))
                    #expect(batch.unsafeBytes(atRow: position, column: 1).map { Array($0) } == row.withUnsafeBytes(at: 1) { $0.map { Array($0) } })
                    #expect((batch.unsafeBytes(atRow: position, column: 1) == nil) == (keys.last.map { $0 % 2 == 0 } ?? false))
                }
            }
            #expect(keys == [1, 2, 3, 4, 5])
        }
    }
}
