import Foundation
import PostgresClient
import Testing

@Suite("Transactions, isolation options and savepoints")
struct TransactionTests {
    @Test func commitMakesChangesVisibleToOthers() async throws {
        let table = TestServer.uniqueName("committed")
        try await withConnection { writer async throws in
            try await writer.query("CREATE TABLE \(table) (n int)")
            try await writer.withTransaction { connection async throws in
                try await connection.query("INSERT INTO \(table) VALUES (1), (2)")
            }
            try await withConnection { reader async throws in
                #expect(try await reader.query("SELECT count(*) FROM \(table)")[0].decode(Int64.self, at: 0) == 2)
            }
            try await writer.query("DROP TABLE \(table)")
        }
    }

    @Test func throwingRollsBackEverything() async throws {
        struct Abort: Error {}
        try await withConnection { connection async throws in
            try await connection.query("CREATE TEMP TABLE ledger (n int)")
            await #expect(throws: Abort.self) {
                try await connection.withTransaction { connection async throws in
                    try await connection.query("INSERT INTO ledger VALUES (1)")
                    throw Abort()
                }
            }
            #expect(try await connection.query("SELECT count(*) FROM ledger")[0].decode(Int64.self, at: 0) == 0)
            #expect(await connection.transactionStatus == .idle)
        }
    }

    @Test func nestedCallsUseSavepoints() async throws {
        struct Inner: Error {}
        try await withConnection { connection async throws in
            try await connection.query("CREATE TEMP TABLE nested (n int)")
            try await connection.withTransaction { connection async throws in
                try await connection.query("INSERT INTO nested VALUES (1)")
                try? await connection.withTransaction { connection async throws in
                    try await connection.query("INSERT INTO nested VALUES (2)")
                    throw Inner()
                }
                // A failed statement inside a savepoint does not poison the outer transaction.
                _ = try? await connection.withTransaction { connection async throws in
                    try await connection.query("SELECT 1/0")
                }
                try await connection.withTransaction { connection async throws in
                    try await connection.query("INSERT INTO nested VALUES (3)")
                }
            }
            let values = try await connection.query("SELECT array_agg(n ORDER BY n) FROM nested")[0].decode([Int32].self, at: 0)
            #expect(values == [1, 3])
        }
    }

    @Test func readOnlyTransactionRefusesWrites() async throws {
        let table = TestServer.uniqueName("guarded")
        try await withConnection { connection async throws in
            // Not a TEMP table: PostgreSQL lets read-only transactions write those.
            try await connection.query("CREATE TABLE \(table) (n int)")
            defer { Task { try await connection.query("DROP TABLE \(table)") } }
            let error = await capturePostgresError {
                try await connection.withTransaction(TransactionOptions(isolation: .serializable, readOnly: true, deferrable: true)) { connection async throws in
                    let level = try await connection.query("SHOW transaction_isolation")[0].decode(String.self, at: 0)
                    #expect(level == "serializable")
                    try await connection.query("INSERT INTO \(table) VALUES (1)")
                }
            }
            #expect(error?.sqlState == .readOnlyTransaction)
        }
    }

    @Test func serializationFailureIsRetryable() async throws {
        let table = TestServer.uniqueName("serial")
        try await withConnection { setup async throws in
            try await setup.query("CREATE TABLE \(table) (id int PRIMARY KEY, n int)")
            try await setup.query("INSERT INTO \(table) VALUES (1, 0)")
            let first = try await TestServer.connect()
            let second = try await TestServer.connect()
            let options = TransactionOptions(isolation: .repeatableRead)
            let error = await capturePostgresError {
                try await first.withTransaction(options) { first async throws in
                    _ = try await first.query("SELECT n FROM \(table) WHERE id = 1")
                    try await second.withTransaction(options) { second async throws in
                        try await second.query("UPDATE \(table) SET n = n + 1 WHERE id = 1")
                    }
                    try await first.query("UPDATE \(table) SET n = n + 1 WHERE id = 1")
                }
            }
            #expect(error?.sqlState == .serializationFailure)
            #expect(error?.isRetryable == true)
            #expect(await first.transactionStatus == .idle)
            await first.close()
            await second.close()
            try await setup.query("DROP TABLE \(table)")
        }
    }

    @Test func preparedStatementsRunRepeatedly() async throws {
        try await withConnection { connection async throws in
            let statement = try await connection.prepare("SELECT $1::int8 * 2")
            for value in [Int64(1), 21, -5] {
                #expect(try await connection.execute(statement, bindings: PostgresBindings(value))[0].decode(Int64.self, at: 0) == value * 2)
            }
            let other = try await TestServer.connect()
            let error = await capturePostgresError { try await other.execute(statement) }
            #expect(error?.kind == .misuse)
            await other.close()
        }
    }

    @Test func scriptsRunSeveralStatements() async throws {
        try await withConnection { connection async throws in
            let results = try await connection.execute(script: """
                CREATE TEMP TABLE script_table (n int);
                INSERT INTO script_table VALUES (1), (2), (3);
                SELECT sum(n) FROM script_table;
                """)
            #expect(results.count == 3)
            #expect(try results[2][0].decode(Int64.self, at: 0) == 6)
            #expect(results[1].affectedRows == 3)
        }
    }
}
