import Foundation
import PostgresClient
import Testing

@Suite("Errors carry SQLSTATE and the server's fields; the connection survives them")
struct ErrorTests {
    @Test func uniqueViolationNamesTheConstraint() async throws {
        try await withConnection { connection async throws in
            try await connection.query("CREATE TEMP TABLE people (id int PRIMARY KEY, email text CONSTRAINT people_email_key UNIQUE)")
            try await connection.query("INSERT INTO people VALUES ($1, $2)", Int32(1), "a@example.com")
            let error = await capturePostgresError {
                try await connection.query("INSERT INTO people VALUES ($1, $2)", Int32(2), "a@example.com")
            }
            #expect(error?.kind == .server)
            #expect(error?.sqlState == .uniqueViolation)
            #expect(error?.constraintName == "people_email_key")
            #expect(error?.tableName == "people")
            #expect(error?.severity == "ERROR")
            #expect(error?.detail?.contains("a@example.com") == true)
            let count = try await connection.query("SELECT count(*) FROM people")[0].decode(Int64.self, at: 0)
            #expect(count == 1)
        }
    }

    @Test func syntaxErrorHasItsPosition() async throws {
        try await withConnection { connection async throws in
            let error = await capturePostgresError { try await connection.query("SELECT * FROMM nowhere") }
            #expect(error?.sqlState == .syntaxError)
            #expect(error?.position == 10)
            #expect(error?.statement == "SELECT * FROMM nowhere")
            #expect(try await connection.query("SELECT 1")[0].decode(Int32.self, at: 0) == 1)
        }
    }

    @Test func notNullAndCheckViolationsNameTheColumn() async throws {
        try await withConnection { connection async throws in
            try await connection.query("CREATE TEMP TABLE things (weight int NOT NULL CHECK (weight >= 0))")
            let null = await capturePostgresError { try await connection.query("INSERT INTO things VALUES ($1)", Int32?.none) }
            #expect(null?.sqlState == .notNullViolation)
            #expect(null?.columnName == "weight")
            let check = await capturePostgresError { try await connection.query("INSERT INTO things VALUES ($1)", Int32(-1)) }
            #expect(check?.sqlState == .checkViolation)
            #expect(check?.constraintName == "things_weight_check")
        }
    }

    @Test func decodingTheWrongTypeNamesColumnAndBothTypes() async throws {
        try await withConnection { connection async throws in
            let row = try await connection.query("SELECT 42 AS answer, NULL::text AS nothing")[0]
            let mismatch = await capturePostgresError { _ = try row.decode(String.self, named: "answer") }
            #expect(mismatch?.kind == .decoding)
            #expect(mismatch?.message.contains("\"answer\"") == true)
            #expect(mismatch?.message.contains("integer") == true)
            #expect(mismatch?.message.contains("String") == true)
            let null = await capturePostgresError { _ = try row.decode(String.self, named: "nothing") }
            #expect(null?.message.contains("is NULL") == true)
            #expect(null?.hint?.contains("String?") == true)
            #expect(try row.decode(String?.self, named: "nothing") == nil)
            let unknown = await capturePostgresError { _ = try row.decode(Int.self, named: "missing") }
            #expect(unknown?.kind == .misuse)
            #expect(unknown?.hint?.contains("\"answer\"") == true)
        }
    }

    @Test func failedTransactionIsReportedAndRecoverable() async throws {
        try await withConnection { connection async throws in
            let error = await capturePostgresError {
                try await connection.withTransaction { connection async throws in
                    _ = try await connection.query("SELECT 1/0")
                }
            }
            #expect(error?.sqlState == SQLState("22012"))
            #expect(await connection.transactionStatus == .idle)
            #expect(try await connection.query("SELECT 2")[0].decode(Int32.self, at: 0) == 2)
        }
    }

    @Test func closedConnectionSaysSo() async throws {
        let connection = try await TestServer.connect()
        await connection.close()
        let error = await capturePostgresError { try await connection.query("SELECT 1") }
        #expect(error?.kind == .connectionClosed)
    }

    @Test func terminatedBackendIsAConnectionLossNotAQueryError() async throws {
        try await withConnection { admin async throws in
            let victim = try await TestServer.connect()
            try await admin.query("SELECT pg_terminate_backend($1)", victim.backendPID)
            let error = await capturePostgresError { try await victim.query("SELECT 1") }
            #expect(error?.kind == .connectionLost)
            #expect(error?.isRetryable == true)
            #expect(victim.isClosed)
        }
    }
}
