import Foundation
import PostgresClient
import Testing

@Suite("COPY FROM STDIN in binary format")
struct CopyTests {
    @Test func copiesAHundredThousandRowsExactly() async throws {
        try await withConnection { connection async throws in
            try await connection.query("""
                CREATE TEMP TABLE items (id bigint PRIMARY KEY, name text NOT NULL, created_at timestamptz NOT NULL,
                                         done boolean NOT NULL, weight integer, tags text[])
                """)
            let start = Date(timeIntervalSince1970: 1_700_000_000)
            let copied = try await connection.copyRows(into: "items", columns: ["id", "name", "created_at", "done", "weight", "tags"]) { writer in
                for i in 0..<100_000 {
                    try writer.append(Int64(i), "Item \(i) ✓", start.addingTimeInterval(Double(i)), i % 2 == 0,
                                      i % 10 == 0 ? nil : Int32(i % 100), ["t\(i % 3)"])
                }
            }
            #expect(copied == 100_000)
            let summary = try await connection.query("""
                SELECT count(*), sum(id)::bigint, count(weight), sum(weight), count(*) FILTER (WHERE done),
                       max(created_at), min(name), count(*) FILTER (WHERE tags = ARRAY['t2'])
                FROM items
                """)[0]
            #expect(try summary.decode(Int64.self, at: 0) == 100_000)
            #expect(try summary.decode(Int64.self, at: 1) == 4_999_950_000)
            #expect(try summary.decode(Int64.self, at: 2) == 90_000)
            #expect(try summary.decode(Int64.self, at: 4) == 50_000)
            #expect(try summary.decode(Date.self, at: 5) == start.addingTimeInterval(99_999))
            #expect(try summary.decode(String.self, at: 6) == "Item 0 ✓")
            #expect(try summary.decode(Int64.self, at: 7) == 33_333)
        }
    }

    @Test func aThrowingWriterAbortsTheWholeCopy() async throws {
        struct Stop: Error {}
        try await withConnection { connection async throws in
            try await connection.query("CREATE TEMP TABLE sink (n int)")
            await #expect(throws: Stop.self) {
                try await connection.copyRows(into: "sink", columns: ["n"]) { writer in
                    for i in 0..<200_000 {
                        try writer.append(Int32(i))
                        if i == 150_000 { throw Stop() }
                    }
                }
            }
            #expect(try await connection.query("SELECT count(*) FROM sink")[0].decode(Int64.self, at: 0) == 0)
            #expect(await connection.transactionStatus == .idle)
        }
    }

    @Test func constraintViolationInACopyWritesNothing() async throws {
        try await withConnection { connection async throws in
            try await connection.query("CREATE TEMP TABLE unique_sink (n int PRIMARY KEY)")
            let error = await capturePostgresError {
                try await connection.copyRows(into: "unique_sink", columns: ["n"]) { writer in
                    for i in 0..<1000 { try writer.append(Int32(i % 999)) }
                }
            }
            #expect(error?.sqlState == .uniqueViolation)
            #expect(try await connection.query("SELECT count(*) FROM unique_sink")[0].decode(Int64.self, at: 0) == 0)
        }
    }

    @Test func wrongNumberOfValuesIsAMisuse() async throws {
        try await withConnection { connection async throws in
            try await connection.query("CREATE TEMP TABLE pairs (a int, b int)")
            let error = await capturePostgresError {
                try await connection.copyRows(into: "pairs", columns: ["a", "b"]) { writer in
                    try writer.append(Int32(1))
                }
            }
            #expect(error?.kind == .misuse)
            #expect(error?.message.contains("1 values for 2 columns") == true)
        }
    }

    @Test func unknownTableIsAServerError() async throws {
        try await withConnection { connection async throws in
            let error = await capturePostgresError {
                try await connection.copyRows(into: "no_such_table", columns: ["a"]) { _ in }
            }
            #expect(error?.sqlState == .undefinedTable)
            #expect(try await connection.query("SELECT 1")[0].decode(Int32.self, at: 0) == 1)
        }
    }
}
