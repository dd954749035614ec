import ArgumentParser
import Foundation
import PostgresClient
import PostgresMigrations

/// Runs `body` with the name of the database the URL names and a connection to the
/// server's maintenance database to create or drop it from.
private func withMaintenance(_ common: CommonOptions, _ body: (String, Connection) async throws -> Void) async throws {
    let (database, configuration) = try maintenance(common)
    let connection = try await Connection.connect(configuration)
    do {
        try await body(database, connection)
    } catch {
        await connection.close()
        throw error
    }
    await connection.close()
}

private func maintenance(_ common: CommonOptions) throws -> (database: String, configuration: Configuration) {
    var configuration = try common.connectionConfiguration()
    guard let database = configuration.database ?? ProcessInfo.processInfo.environment["PGDATABASE"], !database.isEmpty else {
        throw ValidationError("the database URL names no database (postgres://…/NAME)")
    }
    configuration.database = database == "postgres" ? "template1" : "postgres"
    if configuration["application_name"] == nil { configuration["application_name"] = "postgres-data" }
    return (database, configuration)
}

struct CreateCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Creates the database the URL names, unless it exists (as dbmate create).")

    @OptionGroup var common: CommonOptions

    func execute(_ output: Output) async throws {
        try await withMaintenance(common) { database, connection in
            if try await connection.query("SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", database)[0].decode(Bool.self, at: 0) {
                output.line("database \(database) already exists")
            } else {
                try await connection.execute(script: "CREATE DATABASE \(quoteIdentifier(database))")
                output.line(output.styled("✓ ", .green) + "created database \(database)")
            }
            try output.document(["database": database])
        }
    }
}

struct DropCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "drop",
        abstract: "Drops the database the URL names (needs --yes; --force also ends its sessions).")

    @OptionGroup var common: CommonOptions

    @Flag(name: .long, help: "Confirm: the database and all its data are destroyed.")
    var yes = false

    @Flag(name: .long, help: "End the sessions connected to it first (DROP DATABASE … WITH (FORCE), PostgreSQL 13+).")
    var force = false

    func execute(_ output: Output) async throws {
        guard yes else { throw ValidationError("drop destroys the database and all its data: pass --yes to confirm") }
        try await withMaintenance(common) { database, connection in
            try await connection.execute(script: "DROP DATABASE IF EXISTS \(quoteIdentifier(database))\(force ? " WITH (FORCE)" : "")")
            output.line(output.styled("✓ ", .green) + "dropped database \(database)")
            try output.document(["database": database])
        }
    }
}

struct WaitCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Waits until the database accepts connections (as dbmate wait), for a deploy script or a container start.")

    @OptionGroup var common: CommonOptions

    @Option(name: .long, help: "Seconds to wait before failing (exit 1).")
    var timeout: Double = 60

    func execute(_ output: Output) async throws {
        let configuration = try common.connectionConfiguration()
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int64(timeout * 1000))
        var announced = false
        while true {
            do {
                let connection = try await Connection.connect(configuration)
                _ = try await connection.query("SELECT 1")
                await connection.close()
                output.line(output.styled("✓ ", .green) + "the database accepts connections")
                try output.document(["ready": true])
                return
            } catch let error as PostgresError where error.kind != .invalidConfiguration && clock.now < deadline {
                if !announced {
                    announced = true
                    output.line("waiting for the database (\(error.message.split(separator: "\n").first ?? "")) …")
                }
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }
}
