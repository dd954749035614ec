import ArgumentParser
import PostgresMigrations

struct StatusCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Lists every migration as applied, pending, out-of-order, edited, partial, missing or baseline.")

    @OptionGroup var common: CommonOptions

    @Flag(name: .long, help: "Exit with 3 when a migration is pending (a repeatable one too), edited, partial or missing.")
    var exitCode = false

    func execute(_ output: Output) async throws {
        let statuses = try await migrator().status()
        try output.document(statuses)
        for status in statuses {
            let label = status.state.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)
            let style: Output.Style = switch status.state {
            case .applied, .baseline: .green
            case .pending: .yellow
            case .edited, .missing, .outOfOrder, .partial: .red
            }
            var line = output.styled(label, style) + " " + (status.fileName ?? "\(status.version)_\(status.name) (no file)")
            if let applied = status.applied, status.state != .pending {
                line += output.styled("  \(applied.appliedAt.formatted(.iso8601)) by \(applied.appliedBy)", .dim)
            }
            if status.state == .partial, let done = status.applied?.statementsApplied {
                line += "  (\(done) statement\(done == 1 ? "" : "s") done\(status.applied?.checksum != status.checksum ? "; the file changed since, up resumes with it" : ""))"
            }
            output.line(line)
        }
        let migrator = try migrator()
        let pendingRepeatables = Set(try await migrator.pendingRepeatables().map(\.fileName))
        for repeatable in migrator.directory.repeatables {
            let pending = pendingRepeatables.contains(repeatable.fileName)
            output.line(output.styled((pending ? "pending" : "applied").padding(toLength: 12, withPad: " ", startingAt: 0), pending ? .yellow : .green)
                        + " \(repeatable.fileName)" + output.styled("  (repeatable\(pending ? ": new or changed, up runs it" : ""))", .dim))
        }
        if statuses.isEmpty && migrator.directory.repeatables.isEmpty { output.line("no migrations in \(common.dir)") }
        let outstanding = statuses.filter { ![.applied, .baseline].contains($0.state) }
        if exitCode && !(outstanding.isEmpty && pendingRepeatables.isEmpty) { throw ExitCode(3) }
    }
}

struct VerifyCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Checks the database against the files: no edited, missing, out-of-order or half-applied migration and no invalid index (with --scripts, the verify sections hold).")

    @OptionGroup var common: CommonOptions

    @Flag(name: .long, help: "Also run the verify section of every applied migration (in a read-only transaction rolled back).")
    var scripts = false

    func execute(_ output: Output) async throws {
        let migrator = try migrator()
        var problems = try await migrator.verify()
        if scripts { problems += try await migrator.runVerifySections().map(\.description) }
        let pending = try await migrator.status().filter { $0.state == .pending }.count
        try output.document(VerifyDocument(problems: problems, pending: pending))
        for problem in problems { output.line(output.styled("✗ ", .red) + problem) }
        guard problems.isEmpty else { throw ExitCode(3) }
        let rest = pending == 0 ? "" : "; \(pending) file\(pending == 1 ? " is" : "s are") pending (postgres-data up applies \(pending == 1 ? "it" : "them"))"
        output.line(output.styled("✓ ", .green) + "the applied migrations match \(common.dir)" + rest)
    }
}

/// What `verify` prints in JSON.
struct VerifyDocument: Encodable {
    var problems: [String]
    var pending: Int
}

struct BaselineCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "baseline",
        abstract: "Adopts an existing database: migrations up to VERSION count as applied without running.")

    @OptionGroup var common: CommonOptions

    @Argument(help: "The version the database's schema already corresponds to.")
    var version: String

    func execute(_ output: Output) async throws {
        let version = try parseVersion(version)
        try await migrator().baseline(version)
        output.line(output.styled("✓ ", .green) + "baseline \(version) recorded; up will start after it")
        try output.document(["baseline": version.text])
    }
}

struct RepairCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "repair",
        abstract: "Records the current checksums of edited applied migrations, once a reviewer judged the edits harmless.")

    @OptionGroup var common: CommonOptions

    func execute(_ output: Output) async throws {
        let repaired = try await migrator().repair()
        for version in repaired { output.line("checksum of \(version) updated") }
        if repaired.isEmpty { output.line("no edited migration") }
        try output.document(["repaired": repaired.map(\.text)])
    }
}
