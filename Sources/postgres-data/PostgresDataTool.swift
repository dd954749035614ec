import ArgumentParser
import Foundation
import PostgresMigrations

/// `postgres-data`: the migration tool.
@main
struct PostgresDataTool: AsyncParsableCommand {
    /// What `postgres-data --version` prints.
    static let version = "0.10.0"

    static let configuration = CommandConfiguration(
        commandName: "postgres-data",
        abstract: "Applies, checks and writes the SQL migrations of a PostgresData app, safely from many instances at once.",
        discussion: """
            The database comes from --database-url, else $DATABASE_URL, else a .env file in the current folder \
            (DATABASE_URL or PG* lines), else libpq's PG* variables (PGHOST, PGDATABASE, …). Passwords are never printed.

            Exit codes:
              0   success
              1   a statement, a verify section or the connection failed (the failed migration was rolled back); wait timed out
              2   refused before running anything: an invalid or edited file, a folder that differs from postgres-data.sum, out-of-order versions, an unknown version
              3   checks found something: pending migrations (status --exit-code), verify problems (and failing verify sections), lint errors (warnings with --strict), a non-empty diff (diff --exit-code)
              4   a lock could not be had: another runner kept the migration lock, or lock_timeout after every retry
              64  the command line is wrong
            """,
        version: PostgresDataTool.version,
        subcommands: [
            NewCommand.self, UpCommand.self, DownCommand.self, StatusCommand.self, PlanCommand.self, VerifyCommand.self,
            BaselineCommand.self, RepairCommand.self, HashCommand.self, LintCommand.self, DiffCommand.self, StageCommand.self, DumpCommand.self,
            CreateCommand.self, DropCommand.self, WaitCommand.self,
        ]
    )
}
