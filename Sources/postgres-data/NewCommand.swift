import ArgumentParser
import Foundation
import PostgresMigrations

struct NewCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Creates an empty migration file, numbered after the highest one (or timestamped, as the folder already is).")

    @OptionGroup var common: CommonOptions

    @Argument(help: "What the migration does, in a few words (add_items_weight).")
    var name: String

    @Option(name: .long, help: "sequential (0001, 0002, …) or timestamp (YYYYMMDDHHMMSS, UTC). Default: what the folder uses.")
    var style: MigrationDirectory.VersionStyle?

    @Flag(name: .long, help: "A repeatable migration (R__NAME.sql): run after the versioned ones whenever it changes.")
    var repeatable = false

    func execute(_ output: Output) async throws {
        if !FileManager.default.fileExists(atPath: common.dir) {
            try FileManager.default.createDirectory(atPath: common.dir, withIntermediateDirectories: true)
        }
        let path = try common.directory().createMigration(named: name, style: style, repeatable: repeatable)
        output.line(output.styled("created ", .green) + path)
        try output.document(["path": path])
    }
}

extension MigrationDirectory.VersionStyle: ExpressibleByArgument {}

struct HashCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "hash",
        abstract: "Records the checksum of every file of the folder in postgres-data.sum, after a review.",
        discussion: """
            Once postgres-data.sum exists, every command refuses a folder whose files were edited, added, removed or renamed \
            since (exit 2), before reaching a database; new, diff --write and stage --write keep it up to date. Commit it: \
            two branches that each add a migration then conflict in it when merged.
            """)

    @OptionGroup var common: CommonOptions

    func execute(_ output: Output) async throws {
        let sum = try MigrationDirectory.writeSum(path: common.dir)
        // The folder must still parse as migrations.
        _ = try common.directory()
        output.line(output.styled("✓ ", .green) + "\(sum.files.count) file\(sum.files.count == 1 ? "" : "s") recorded in \(common.dir)/\(MigrationSum.fileName)")
        try output.document(["total": sum.total])
    }
}
