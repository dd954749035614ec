import Foundation
import PostgresClient
import PostgresDataTesting
import Testing

/// One fresh database for this test process, created on first use.
enum TestServer {
    private static let database = DatabaseOnce()

    static func configuration() async throws -> Configuration {
        try await database.get()
    }

    static func connect() async throws -> Connection {
        try await Connection.connect(configuration())
    }

    /// A name no other test uses, for tables that several connections share.
    static func uniqueName(_ prefix: String) -> String {
        "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
    }
}

private actor DatabaseOnce {
    // A task, not a value: callers that arrive while it is being created must share it.
    private var creation: Task<Configuration, Error>?
    func get() async throws -> Configuration {
        if let creation { return try await creation.value }
        let task = Task { try await TestDatabase.fresh(prefix: "client_tests") }
        creation = task
        return try await task.value
    }
}

/// Runs `body` with a new connection and closes it afterwards.
func withConnection<R>(_ body: (Connection) async throws -> R) async throws -> R {
    let connection = try await TestServer.connect()
    do {
        let result = try await body(connection)
        await connection.close()
        return result
    } catch {
        await connection.close()
        throw error
    }
}

/// The PostgresError `body` throws, or nil (recording an issue) when it throws nothing or something else.
func capturePostgresError(
    _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
) async -> PostgresError? {
    do {
        try await body()
        Issue.record("expected a PostgresError, but nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as PostgresError {
        return error
    } catch {
        Issue.record("expected a PostgresError, got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The resident set size of this process, in bytes (Linux).
func residentMemory() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let kilobytes = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return kilobytes * 1024
    }
    return 0
}
