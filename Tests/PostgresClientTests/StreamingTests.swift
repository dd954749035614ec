import Foundation
import PostgresClient
import PostgresDataTesting
import Testing

@Suite("Streaming large results in batches with bounded memory")
struct StreamingTests {
    /// 1,000,000 rows of ~400 bytes (≈ 400 MB if held at once) through a cursor.
    @Test(.enabled(if: MemoryIntensiveTests.residentMemoryIsMeaningful, "a sanitizer keeps memory resident"))
    func cursorStreamsAMillionRowsInBoundedMemory() async throws {
        try await MemoryIntensiveTests.exclusively { try await streamAMillionRows() }
    }

    private func streamAMillionRows() async throws {
        try await withConnection { connection async throws in
            let before = residentMemory()
            var peak = before
            var count = 0
            var sum: Int64 = 0
            var batches = 0
            let stream = try connection.stream(
                "SELECT g, repeat('x', 400) FROM generate_series(1, 1000000) AS g", mode: .cursor(batchSize: 10_000))
            for try await batch in stream {
                batches += 1
                for row in batch {
                    sum += try row.decode(Int64.self, at: 0)
                    count += 1
                }
                peak = max(peak, residentMemory())
            }
            #expect(count == 1_000_000)
            #expect(sum == 500_000_500_000)
            #expect(batches == 100)
            let growth = peak - before
            // Held at once the rows take ≈ 400 MB; streamed, a batch of 4 MB. The bound leaves room
            // for the tests that run beside this one (resident memory is the process's).
            #expect(growth < 200 * 1024 * 1024, "resident memory grew by \(growth / 1_048_576) MiB")
            #expect(await connection.transactionStatus == .idle, "the stream's own transaction was closed")
        }
    }

    @Test func singleRowModeStreamsEveryRowInOrder() async throws {
        try await withConnection { connection async throws in
            var expected: Int32 = 1
            var batchSizes: [Int] = []
            for try await batch in try connection.stream("SELECT g::int4 FROM generate_series(1, 25000) g",
                                                          mode: .singleRow(batchSize: 1000)) {
                batchSizes.append(batch.count)
                for row in batch {
                    #expect(try row.decode(Int32.self, at: 0) == expected)
                    expected += 1
                }
            }
            #expect(expected == 25001)
            #expect(batchSizes.allSatisfy { $0 == 1000 })
            #expect(try await connection.query("SELECT 'next'")[0].decode(String.self, at: 0) == "next")
        }
    }

    @Test(arguments: [(StreamMode.cursor(batchSize: 100), false), (.cursor(batchSize: 100), true), (.singleRow(batchSize: 100), false)])
    func leavingTheLoopEarlyFreesTheConnection(mode: StreamMode, readingAhead: Bool) async throws {
        try await withConnection { connection async throws in
            var seen = 0
            for try await batch in try connection.stream("SELECT g FROM generate_series(1, 1000000) g", mode: mode,
                                                          readingAhead: readingAhead) {
                seen += batch.count
                if seen >= 300 { break }
            }
            #expect(seen == 300)
            // The abandoned stream is cleaned up before the next statement runs.
            #expect(try await connection.query("SELECT 42")[0].decode(Int32.self, at: 0) == 42)
            #expect(await connection.transactionStatus == .idle)
            // pg_cursors also lists the protocol-level portal of this very query.
            let cursors = try await connection.query("SELECT count(*) FROM pg_cursors WHERE name LIKE 'pd_cursor%'")[0].decode(Int64.self, at: 0)
            #expect(cursors == 0)
        }
    }

    @Test func cursorInsideTheCallersTransactionLeavesItOpen() async throws {
        try await withConnection { connection async throws in
            try await connection.withTransaction { connection async throws in
                try await connection.query("CREATE TEMP TABLE numbers AS SELECT g AS n FROM generate_series(1, 5000) g")
                var total = 0
                for try await batch in try connection.stream("SELECT n FROM numbers WHERE n > $1", Int32(1000),
                                                              mode: .cursor(batchSize: 1000)) {
                    total += batch.count
                }
                #expect(total == 4000)
                #expect(await connection.transactionStatus == .inTransaction)
            }
        }
    }

    @Test(arguments: [StreamMode.cursor(batchSize: 10), .singleRow(batchSize: 10)])
    func anotherStatementEndsAStreamThatOwnsTheConnection(mode: StreamMode) async throws {
        try await withConnection { connection async throws in
            var iterator = try connection.stream("SELECT g FROM generate_series(1, 100000) g", mode: mode).makeAsyncIterator()
            #expect(try await iterator.next()?.count == 10)
            #expect(try await connection.query("SELECT 1")[0].decode(Int32.self, at: 0) == 1)
            #expect(await connection.transactionStatus == .idle)
            let error = await capturePostgresError { _ = try await iterator.next() }
            #expect(error?.kind == .misuse)
            #expect(error?.message.contains("another statement") == true)
        }
    }

    @Test func aCursorReadingAheadRunsTheNextFetchWhileTheLoopWorks() async throws {
        try await withConnection { connection async throws in
            try await connection.withTransaction { connection async throws in
                try await connection.query("CREATE TEMP SEQUENCE drawn")
                var iterator = try connection.stream("SELECT g, nextval('drawn') FROM generate_series(1, 100) g",
                                                     mode: .cursor(batchSize: 10), readingAhead: true).makeAsyncIterator()
                #expect(try await iterator.next()?.count == 10)
                // Nothing more asked for, yet the server drew the next batch's ten numbers. A
                // statement of the transaction meanwhile waits for that FETCH first.
                #expect(try await connection.query("SELECT last_value FROM drawn")[0].decode(Int64.self, at: 0) == 20)
                var keys: [Int32] = []
                while let batch = try await iterator.next() {
                    for row in batch { keys.append(try row.decode(Int32.self, at: 0)) }
                    // Another statement between every two batches: each FETCH ahead is read
                    // first and kept for the stream.
                    _ = try await connection.query("SELECT count(*) FROM pg_class")
                }
                #expect(keys == Array(11...100))
                #expect(try await connection.query("SELECT last_value FROM drawn")[0].decode(Int64.self, at: 0) == 100)
                #expect(await connection.transactionStatus == .inTransaction)
            }
            #expect(await connection.transactionStatus == .idle)
        }
    }

    @Test(arguments: [false, true])
    func cancellingAStreamStopsTheServerAndKeepsTheConnection(readingAhead: Bool) async throws {
        try await withConnection { connection async throws in
            let reader = Task {
                var rows = 0
                for try await batch in try connection.stream("SELECT g, pg_sleep(0.0005) FROM generate_series(1, 100000) g",
                                                              mode: .cursor(batchSize: 500), readingAhead: readingAhead) {
                    rows += batch.count
                }
                return rows
            }
            try await Task.sleep(for: .milliseconds(400))
            reader.cancel()
            let error = await capturePostgresError { _ = try await reader.value }
            #expect(error?.kind == .canceled)
            #expect(await connection.transactionStatus == .idle)
            #expect(try await connection.query("SELECT 1")[0].decode(Int32.self, at: 0) == 1)
        }
    }

    @Test(arguments: [StreamMode.cursor(batchSize: 100), .singleRow(batchSize: 100)])
    func aStreamWhoseTaskIsCanceledBetweenBatchesCancelsWhatRunsAhead(mode: StreamMode) async throws {
        try await withConnection { connection async throws in
            try await connection.execute(script: "CREATE TEMP SEQUENCE drawn; SET statement_timeout = '150s'")
            let reader = Task {
                // The first batch comes at once; every row after it takes 1 s, so that reading
                // the second instead of canceling it (100 s) cannot pass for a slow cancel
                // request on a loaded machine. Rows of 9 kB: the server sends each as it is
                // made instead of buffering 8 kB, so the first batch comes a row later.
                var iterator = try connection.stream("SELECT g, nextval('drawn'), repeat('x', 9000), pg_sleep(CASE WHEN g > 100 THEN 1 ELSE 0 END) FROM generate_series(1, 1000) g",
                                                     mode: mode, readingAhead: true).makeAsyncIterator()
                _ = try await iterator.next()
                // The second batch's FETCH (or the statement's next rows) is on its way; the
                // task is canceled before it asks for it.
                withUnsafeCurrentTask { $0?.cancel() }
                let error = await capturePostgresError { _ = try await iterator.next() }
                // Asked while the iterator lives: its cleanup is not what ended the statement.
                let status = await connection.transactionStatus
                return withExtendedLifetime(iterator) { (error, status) }
            }
            let (error, status) = try await reader.value
            #expect(error?.kind == .canceled)
            #expect(status == .idle)
            // Canceled on the server rather than read to its end.
            let drawn = try await connection.query("SELECT last_value FROM drawn")[0].decode(Int64.self, at: 0)
            #expect(drawn < 200, "\(drawn)")
        }
    }

    @Test func streamErrorsCarrySQLState() async throws {
        try await withConnection { connection async throws in
            for (mode, readingAhead) in [(StreamMode.cursor(batchSize: 2), false), (.cursor(batchSize: 2), true), (.singleRow(batchSize: 2), false)] {
                // The third batch fails: with reading ahead, in the FETCH sent after the second.
                var rows = 0
                let error = await capturePostgresError {
                    for try await batch in try connection.stream("SELECT 1 / (5 - g) FROM generate_series(1, 100) g", mode: mode,
                                                                  readingAhead: readingAhead) {
                        rows += batch.count
                    }
                }
                #expect(error?.sqlState == SQLState("22012"), "\(mode)")
                #expect(rows == 4, "\(mode)")
                #expect(await connection.transactionStatus == .idle)
            }
        }
    }
}
