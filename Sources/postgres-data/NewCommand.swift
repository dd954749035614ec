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

    func execute(_ output: Output) async throws {
        if !FileManager.default.fileExists(atPath: common.dir) {
            try FileManager.default.createDirectory(atPath: common.dir, withIntermediateDirectories: true)
        }
        let path = try common.directory().createMigration(named: name, style: style)
        output.line(output.styled("created ", .green) + path)
        try output.document(["path": path])
    }
}

extension MigrationDirectory.VersionStyle: ExpressibleByArgument {}
