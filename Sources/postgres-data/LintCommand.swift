import ArgumentParser
import Foundation
import PostgresMigrations

struct LintCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract: "Finds dangerous operations: locks and rewrites of big tables, steps that fail on tables with rows, changes that break running instances.",
        discussion: """
            Without a database, every file of the folder is linted and every table not created by the files counts as existing. \
            With one (--database-url or $DATABASE_URL), only pending files are linted (all with --all), and findings give the \
            live size of the tables they touch. A statement preceded by '-- lint:ignore RULE' is not reported for RULE.
            """)

    @OptionGroup var common: CommonOptions

    @Argument(help: "Files to lint instead of the folder's.")
    var files: [String] = []

    @Flag(name: .long, help: "Lint applied files too.")
    var all = false

    @Flag(name: .long, help: "Exit with 3 on warnings too, not only on errors.")
    var strict = false

    @Option(name: .long, help: "The lock_timeout the runner will use for files that set none.")
    var lockTimeout = MigratorOptions().lockTimeout

    func execute(_ output: Output) async throws {
        var migrations: [Migration]
        if files.isEmpty {
            migrations = try common.directory().migrations
        } else {
            migrations = try files.map { path in
                guard FileManager.default.fileExists(atPath: path) else {
                    throw MigrationError.invalidFile(file: path, line: nil, message: "no such file")
                }
                guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
                    throw MigrationError.invalidFile(file: path, line: nil, message: "cannot be read as UTF-8 text")
                }
                return try Migration(fileName: (path as NSString).lastPathComponent, contents: text)
            }
        }
        var linter = MigrationLinter(defaultLockTimeout: lockTimeout)
        if hasDatabase {
            let migrator = try migrator(needsFiles: files.isEmpty)
            linter.tableSizes = try await migrator.tableSizes()
            if files.isEmpty && !all {
                let pending = Set(try await migrator.status().filter { [.pending, .outOfOrder, .partial].contains($0.state) }.map(\.version))
                migrations = migrations.filter { pending.contains($0.version) }
            }
        }
        let findings = try linter.lint(migrations)
        try output.document(findings)
        for finding in findings {
            let label = output.styled(finding.severity.rawValue, finding.severity == .error ? .red : .yellow)
            output.line("\(finding.file):\(finding.line): \(label) [\(finding.rule)] \(finding.message)\n  " + output.styled("hint: \(finding.hint)", .dim))
        }
        let errors = findings.filter { $0.severity == .error }.count
        output.line(findings.isEmpty ? output.styled("✓ ", .green) + "\(migrations.count) file\(migrations.count == 1 ? "" : "s") checked, nothing dangerous"
                    : "\(errors) error\(errors == 1 ? "" : "s"), \(findings.count - errors) warning\(findings.count - errors == 1 ? "" : "s")")
        if errors > 0 || (strict && !findings.isEmpty) { throw ExitCode(3) }
    }

    private var hasDatabase: Bool {
        common.databaseURL != nil || !(ProcessInfo.processInfo.environment["DATABASE_URL"] ?? "").isEmpty
            || !(DotEnv.read(".env")["DATABASE_URL"] ?? "").isEmpty
    }
}
