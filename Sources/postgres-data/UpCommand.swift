import ArgumentParser
import PostgresMigrations

struct UpCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "up",
        abstract: "Applies pending migrations (finishing first a non-transactional one a previous run left half done).")

    @OptionGroup var common: CommonOptions
    @OptionGroup var runOptions: RunOptions

    @Option(name: .long, help: "Stop after this version.")
    var to: String?

    @Flag(name: .long, help: "Also run pending migrations whose versions are lower than an applied one.")
    var allowOutOfOrder = false

    @Flag(name: .long, help: "REINDEX CONCURRENTLY an invalid index found after CREATE INDEX CONCURRENTLY instead of failing.")
    var rebuildInvalidIndexes = false

    func execute(_ output: Output) async throws {
        let target = try to.map(parseVersion)
        let migrator = try migrator(runOptions) {
            $0.allowOutOfOrder = allowOutOfOrder
            $0.rebuildInvalidIndexes = rebuildInvalidIndexes
        }
        let applied = try await migrator.up(to: target)
        if applied.isEmpty { output.line("nothing to apply: the database is up to date") }
        else { output.line(output.styled("\(applied.count) migration\(applied.count == 1 ? "" : "s") applied", .bold)) }
        try output.document(RunReport(.up, applied))
    }
}

struct DownCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "down",
        abstract: "Reverts the last migration (or --steps N, or every one above --to V) with its down section.")

    @OptionGroup var common: CommonOptions
    @OptionGroup var runOptions: RunOptions

    @Option(name: .long, help: "How many migrations to revert, newest first.")
    var steps: Int?

    @Option(name: .long, help: "Revert every migration above this version (0: all).")
    var to: String?

    func validate() throws {
        if steps != nil && to != nil { throw ValidationError("give --steps or --to, not both") }
        if let steps, steps < 1 { throw ValidationError("--steps must be at least 1") }
    }

    func execute(_ output: Output) async throws {
        let reverted = try await migrator(runOptions).down(steps: steps, to: try to.map(parseVersion))
        if reverted.isEmpty { output.line("nothing to revert") }
        else { output.line(output.styled("\(reverted.count) migration\(reverted.count == 1 ? "" : "s") reverted", .bold)) }
        try output.document(RunReport(.down, reverted))
    }
}

func parseVersion(_ text: String) throws -> MigrationVersion {
    guard let version = MigrationVersion(text) else { throw ValidationError("a version is all digits (0003 or 20261121093000), not \"\(text)\"") }
    return version
}
