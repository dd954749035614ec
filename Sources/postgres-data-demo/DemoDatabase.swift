import Foundation
import PostgresClient
import PostgresDataTesting

/// Where the demo runs: a fresh database on a throwaway server when `DATABASE_URL` is unset,
/// otherwise a schema of its own on that server, dropped afterwards.
struct DemoDatabase {
    let configuration: Configuration
    /// The schema to drop at the end, on a server the demo does not own.
    let schema: String?
    /// The server as `DATABASE_URL` names it (without the demo's search path).
    var server: Configuration { schemaServer ?? configuration }
    private var schemaServer: Configuration?

    static func open() async throws -> DemoDatabase {
        guard let server = try Configuration.fromEnvironment() else {
            print("• Starting a throwaway PostgreSQL (no DATABASE_URL set)…")
            return DemoDatabase(configuration: try await TestDatabase.fresh(prefix: "postgres_data_demo"), schema: nil)
        }
        print("• Using the server DATABASE_URL names (\(server)), in a schema of its own…")
        let schema = "postgres_data_demo_\(getpid())"
        let admin = try await Connection.connect(server)
        try await admin.execute(script: "CREATE SCHEMA \(quoteIdentifier(schema))")
        await admin.close()
        var configuration = server
        configuration["options"] = [server["options"], "-c search_path=\(schema)"].compactMap { $0 }.joined(separator: " ")
        return DemoDatabase(configuration: configuration, schema: schema, schemaServer: server)
    }

    /// Applies `migrations/` with the `postgres-data` binary built beside this one, as a deploy would.
    func migrate() throws {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let tool = URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("postgres-data")
        guard FileManager.default.isExecutableFile(atPath: tool.path) else {
            throw DemoError("\(tool.path) is missing: build it first (swift build -c release --product postgres-data; `make demo` does)")
        }
        let process = Process()
        process.executableURL = tool
        process.arguments = ["up", "--dir", "migrations"]
        // The URL (with its password, if any) goes through the environment, never the command line.
        process.environment = ProcessInfo.processInfo.environment
            .merging(["DATABASE_URL": configuration.url(redactingPassword: false)]) { $1 }
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw DemoError("postgres-data up failed with exit code \(process.terminationStatus)")
        }
    }

    /// Refreshes the planner's statistics after the import.
    func analyze() async throws {
        let connection = try await Connection.connect(configuration)
        defer { Task { await connection.close() } }
        try await connection.execute(script: "ANALYZE")
    }

    /// The first column of the first row, as text.
    func scalar<each Value: PostgresEncodable>(_ sql: String, _ values: repeat each Value) async throws -> String {
        let connection = try await Connection.connect(configuration)
        defer { Task { await connection.close() } }
        return try await connection.query("SELECT (\(sql))::text", repeat each values)[0].decode(String.self, at: 0)
    }

    /// Drops the demo's schema on a server it does not own; a throwaway server goes away by itself.
    func cleanUp() async {
        guard let schema else { return }
        do {
            let admin = try await Connection.connect(server)
            try await admin.execute(script: "DROP SCHEMA \(quoteIdentifier(schema)) CASCADE")
            await admin.close()
            print("  (schema \(schema) dropped)")
        } catch {
            print("  ✗ could not drop schema \(schema): \(error)")
        }
    }
}

struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
