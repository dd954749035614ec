import Foundation
import PostgresClient
import PostgresDataTesting
import PostgresMigrations
import Testing

/// A migrations folder in a temporary directory, and a fresh database to run it on.
struct MigrationFixture {
    let folder: String
    let database: Configuration

    /// `files`: file name → contents.
    static func make(_ files: [String: String] = [:]) async throws -> MigrationFixture {
        let folder = try TemporaryFolder.make(prefix: "pd-migrations")
        let fixture = MigrationFixture(folder: folder, database: try await TestDatabase.fresh(prefix: "pd_migrations"))
        for (name, contents) in files { try fixture.write(name, contents) }
        return fixture
    }

    func write(_ name: String, _ contents: String) throws {
        try contents.write(toFile: folder + "/" + name, atomically: true, encoding: .utf8)
    }

    func migrator(_ configure: (inout MigratorOptions) -> Void = { _ in },
                  events: Locked<[MigrationEvent]>? = nil) throws -> Migrator {
        var options = MigratorOptions()
        options.logger.logLevel = .warning
        options.retryDelay = .milliseconds(50)
        configure(&options)
        return Migrator(configuration: database, directory: try MigrationDirectory(path: folder), options: options,
                        onEvent: { event in events?.withLock { $0.append(event) } })
    }

    func connect() async throws -> Connection {
        try await Connection.connect(database)
    }

    /// The value of a one-column, one-row query.
    func scalar<Value: PostgresDecodable>(_ sql: String, as type: Value.Type = Value.self) async throws -> Value {
        let connection = try await connect()
        defer { Task { await connection.close() } }
        return try await connection.query(sql)[0].decode(Value.self, at: 0)
    }

    func tableExists(_ name: String) async throws -> Bool {
        try await scalar("SELECT to_regclass('\(name)') IS NOT NULL")
    }

    /// Runs the `postgres-data` binary on this fixture's folder and database.
    func tool(_ arguments: [String]) async throws -> ToolRun {
        try await ToolRun.run(arguments + ["--dir", folder], databaseURL: database.url(redactingPassword: false))
    }
}

/// One run of the `postgres-data` binary built beside the tests.
struct ToolRun: Sendable {
    var status: Int32
    var output: String
    var errors: String

    /// The binary next to the test bundle (`swift build --build-tests` builds both).
    static var binary: String { ChildProcess.builtExecutable(named: "postgres-data") ?? "postgres-data" }

    static func run(_ arguments: [String], databaseURL: String) async throws -> ToolRun {
        let process = try start(arguments, databaseURL: databaseURL)
        return await process.finish()
    }

    static func start(_ arguments: [String], databaseURL: String) throws -> RunningTool {
        let binary = binary
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw ToolMissing(description: "the postgres-data binary is not built next to the tests: run `swift build --build-tests` first")
        }
        return try RunningTool(binary: binary, arguments: arguments, databaseURL: databaseURL)
    }
}

struct ToolMissing: Error, CustomStringConvertible {
    var description: String
}

/// A `postgres-data` process under way.
final class RunningTool: Sendable {
    private let process: ChildProcess
    private let outputPath: String
    private let errorPath: String

    init(binary: String, arguments: [String], databaseURL: String) throws {
        let base = NSTemporaryDirectory() + "pd-tool-\(UUID().uuidString.prefix(8))"
        outputPath = base + ".out"
        errorPath = base + ".err"
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = databaseURL
        environment["NO_COLOR"] = "1"
        process = try ChildProcess([binary] + arguments, environment: environment, outputPath: outputPath, errorPath: errorPath)
    }

    var isRunning: Bool { process.isRunning }

    func kill() {
        process.kill()
    }

    func finish() async -> ToolRun {
        // A tool that has not ended after two minutes is stuck: killed, so that its output shows where.
        let status = await process.exit(within: .seconds(120))
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: outputPath)
        try? FileManager.default.removeItem(atPath: errorPath)
        return ToolRun(status: status, output: output, errors: errors)
    }
}
