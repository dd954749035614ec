import Foundation
import Logging
import PostgresClient
import PostgresDataTesting
import Testing

/// A log handler that keeps every record, for the tests to read.
final class LogRecorder: LogHandler, @unchecked Sendable {
    struct Record: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
        /// The message and every metadata value, to search for what must never appear.
        var everything: String { ([message] + metadata.map { "\($0.key)=\($0.value)" }).joined(separator: " ") }
    }

    private let lock = NSLock()
    private var kept: [Record] = []
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        all.merge(event.metadata ?? [:]) { $1 }
        let record = Record(level: event.level, message: "\(event.message)", metadata: all.mapValues { "\($0)" })
        lock.withLock { kept.append(record) }
    }

    var records: [Record] { lock.withLock { kept } }

    func logger() -> Logger { Logger(label: "test") { _ in self } }
}

@Suite struct StatementLoggingTests {
    @Test func statementsAreLoggedAtDebugWithTheirTextAndParameterCountNeverTheirValues() async throws {
        let recorder = LogRecorder()
        var configuration = try await TestDatabase.server()
        configuration.slowStatementThreshold = .milliseconds(500)
        let pool = ConnectionPool(configuration: configuration, maximumConnections: 1, name: "logged", logger: recorder.logger())
        try await pool.withConnection { connection in
            _ = try await connection.query("SELECT $1::text, $2::int8", "a-secret-value", 42)
            _ = try await connection.query("SELECT pg_sleep(0.6)")
        }
        await pool.shutdown()
        let records = recorder.records
        let statement = try #require(records.first { $0.level == .debug && $0.metadata["db.query.text"] == "SELECT $1::text, $2::int8" })
        #expect(statement.metadata["db.query.parameter_count"] == "2")
        #expect(records.allSatisfy { !$0.everything.contains("a-secret-value") }, "a value never reaches the log")
        if let password = configuration.password {
            #expect(records.allSatisfy { !$0.everything.contains(password) }, "the password never reaches the log")
        }
        // Only statements past the threshold (the quick one, even on a loaded machine, stays under
        // 500 ms). The pool's own `DISCARD ALL` after the block is left out: under the full suite
        // it once took longer than that.
        let slow = records.filter { $0.level == .notice && $0.message == "slow statement" && $0.metadata["db.query.text"] != "DISCARD ALL" }
        #expect(slow.map { $0.metadata["db.query.text"] } == ["SELECT pg_sleep(0.6)"])
        #expect(records.contains { $0.level == .info && $0.message == "opened a pooled connection" && $0.metadata["db.client.connection.pool.name"] == "logged" })
        #expect(records.contains { $0.level == .info && $0.message == "closing a pooled connection" })
    }
}
