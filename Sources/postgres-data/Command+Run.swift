import ArgumentParser
import PostgresClient
import PostgresMigrations

/// A command whose failures print as the documented exit codes say.
protocol ToolCommand: AsyncParsableCommand {
    var common: CommonOptions { get }
    func execute(_ output: Output) async throws
}

extension ToolCommand {
    func run() async throws {
        let output = common.output
        do {
            try await execute(output)
        } catch let error as ExitCode {
            throw error
        } catch {
            throw output.fail(error)
        }
    }

    /// The runner for this command's options; commands that read only the database
    /// (`dump`, `diff`, `lint` of given files) pass `needsFiles: false`.
    func migrator(_ run: RunOptions? = nil, needsFiles: Bool = true,
                  configure: (inout MigratorOptions) -> Void = { _ in }) throws -> Migrator {
        var options = common.migratorOptions()
        try run?.apply(to: &options)
        configure(&options)
        return Migrator(configuration: try common.connectionConfiguration(), directory: needsFiles ? try common.directory() : try MigrationDirectory(migrations: []), options: options,
                        onEvent: common.output.eventPrinter())
    }
}

/// What `up` and `down` print in JSON.
struct RunReport: Encodable {
    var direction: MigrationEvent.Direction
    var migrations: [Entry]

    struct Entry: Encodable {
        var version: String
        var name: String
        var file: String
    }

    init(_ direction: MigrationEvent.Direction, _ migrations: [Migration]) {
        self.direction = direction
        self.migrations = migrations.map { Entry(version: $0.version.text, name: $0.name, file: $0.fileName) }
    }
}
