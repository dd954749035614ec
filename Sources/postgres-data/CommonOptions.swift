import ArgumentParser
import Foundation
import PostgresClient
import PostgresMigrations

/// Options every command takes: where the migrations and the database are, and how to print.
struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: "The database URL (postgres://user:password@host:port/database). Default: $DATABASE_URL, .env, PG* variables.")
    var databaseURL: String?

    @Option(name: .long, help: "The migrations folder.")
    var dir = "migrations"

    @Option(name: .long, help: "The history table.")
    var historyTable = "postgres_data_migrations"

    @Flag(name: .long, help: "Print machine-readable JSON on standard output instead of text.")
    var json = false

    @Flag(name: .long, help: "Print the server's notices.")
    var verbose = false

    @Flag(name: .long, help: "Never use colour (also when NO_COLOR is set or the output is not a terminal).")
    var noColor = false

    var output: Output { Output(json: json, color: !noColor) }

    func directory() throws -> MigrationDirectory {
        try MigrationDirectory(path: dir)
    }

    /// The database to use, from the first place that names one.
    func connectionConfiguration() throws -> Configuration {
        if let databaseURL { return try Configuration(url: databaseURL) }
        let environment = ProcessInfo.processInfo.environment
        if let url = environment["DATABASE_URL"], !url.isEmpty { return try Configuration(url: url) }
        let file = DotEnv.read(".env")
        if let url = file["DATABASE_URL"], !url.isEmpty { return try Configuration(url: url) }
        // libpq reads PG* variables itself; those from .env count when the environment lacks them.
        for (key, value) in file where key.hasPrefix("PG") && environment[key] == nil {
            setenv(key, value, 0)
        }
        return try Configuration(keywords: [:])
    }

    func migratorOptions() -> MigratorOptions {
        var options = MigratorOptions()
        options.historyTable = historyTable
        // Server notices ("… already exists, skipping") only with --verbose.
        options.logger.logLevel = verbose ? .info : .warning
        return options
    }
}

/// Options of the commands that change the database.
struct RunOptions: ParsableArguments {
    @Option(name: .long, help: "lock_timeout of files that do not set one; 0 disables it.")
    var lockTimeout = MigratorOptions().lockTimeout

    @Option(name: .long, help: "statement_timeout of files that do not set one; 0 disables it.")
    var statementTimeout = MigratorOptions().statementTimeout

    @Option(name: .long, help: "Retries of a migration that hit lock_timeout (with back-off).")
    var lockRetries = MigratorOptions().lockRetries

    @Option(name: .long, help: "Seconds before the first retry; it doubles each time.")
    var retryDelay: Double = 1

    @Option(name: .long, help: "Seconds to wait for another runner holding the migration lock.")
    var lockWait: Double = 600

    func apply(to options: inout MigratorOptions) throws {
        for (name, value) in [("--lock-timeout", lockTimeout), ("--statement-timeout", statementTimeout)] where !Migration.isDuration(value) {
            throw ValidationError("\(name) needs a duration such as 500ms, 5s, 10min or 1h (0 disables it), not \"\(value)\"")
        }
        options.lockTimeout = lockTimeout
        options.statementTimeout = statementTimeout
        options.lockRetries = lockRetries
        options.retryDelay = .milliseconds(Int64(retryDelay * 1000))
        options.migrationLockWait = .milliseconds(Int64(lockWait * 1000))
    }
}

/// `KEY=VALUE` lines of a `.env` file (comments, `export ` and quotes allowed).
enum DotEnv {
    static func read(_ path: String) -> [String: String] {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else { return [:] }
        var values: [String: String] = [:]
        for rawLine in text.split(whereSeparator: \.isNewline) {
            var line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") || line.isEmpty { continue }
            if line.hasPrefix("export ") { line = String(line.dropFirst(7)) }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                value = String(value.dropFirst().dropLast())
            }
            values[key] = value
        }
        return values
    }
}
