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
            live size of the tables they touch (a lock or rewrite of a table under 1 MB is a warning). A statement preceded by \
            '-- lint:ignore RULE' is not reported for RULE. --rules lists the rules; --explain RULE prints one's documentation.
            """)

    @OptionGroup var common: CommonOptions

    @Argument(help: "Files to lint instead of the folder's.")
    var files: [String] = []

    @Flag(name: .long, help: "Lint applied files too.")
    var all = false

    @Flag(name: .long, help: "Exit with 3 on warnings too, not only on errors.")
    var strict = false

    @Flag(name: .long, help: "Also run the style rules (prefer text, timestamptz, bigint, identity; no char(n); names over 63 bytes).")
    var style = false

    @Option(name: .long, help: "The lock_timeout the runner will use for files that set none.")
    var lockTimeout = MigratorOptions().lockTimeout

    @Flag(name: .long, help: "List the rules and exit.")
    var rules = false

    @Option(name: .long, help: "Print the documentation of a rule and exit.")
    var explain: String?

    func execute(_ output: Output) async throws {
        if rules || explain != nil { return try describeRules(output) }
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
        var linter = MigrationLinter(defaultLockTimeout: lockTimeout, includesStyle: style)
        if hasDatabase {
            let migrator = try migrator(needsFiles: files.isEmpty)
            linter.tableSizes = try await migrator.tableSizes()
            linter.provenNotNull = try await migrator.provenNotNullColumns()
            if files.isEmpty && !all {
                let pending = Set(try await migrator.status().filter { [.pending, .outOfOrder, .partial].contains($0.state) }.map(\.version))
                migrations = migrations.filter { pending.contains($0.version) }
            }
        }
        let findings = try linter.lint(migrations)
        try output.document(findings)
        for finding in findings {
            let label = output.styled(finding.severity.rawValue, finding.severity == .error ? .red : .yellow)
            var text = "\(finding.file):\(finding.line): \(label) [\(finding.rule)] \(finding.message)"
            if let statement = finding.statement { text += "\n" + Self.codeFrame(statement, line: finding.line, output: output) }
            if let lock = finding.lock { text += "\n  lock: \(lock)" }
            text += "\n  " + output.styled("fix: \(finding.hint)", .dim)
            if let page = finding.documentation { text += "\n  " + output.styled("docs: \(page) (postgres-data lint --explain \(finding.rule))", .dim) }
            output.line(text)
        }
        let errors = findings.filter { $0.severity == .error }.count
        output.line(findings.isEmpty ? output.styled("✓ ", .green) + "\(migrations.count) file\(migrations.count == 1 ? "" : "s") checked, nothing dangerous"
                    : "\(errors) error\(errors == 1 ? "" : "s"), \(findings.count - errors) warning\(findings.count - errors == 1 ? "" : "s")")
        if errors > 0 || (strict && !findings.isEmpty) { throw ExitCode(3) }
    }

    /// The statement's lines, numbered (at most six; longer ones end with "…").
    static func codeFrame(_ statement: String, line: Int, output: Output) -> String {
        let lines = statement.split(separator: "\n", omittingEmptySubsequences: false)
        let width = String(line + min(lines.count, 6) - 1).count
        var frame = lines.prefix(6).enumerated().map { offset, text in
            let number = String(line + offset)
            return "  " + output.styled(String(repeating: " ", count: width - number.count) + number + " │", .dim) + " " + text
        }
        if lines.count > 6 { frame.append("  " + String(repeating: " ", count: width) + output.styled(" │", .dim) + " …") }
        return frame.joined(separator: "\n")
    }

    private func describeRules(_ output: Output) throws {
        if let explain {
            guard let rule = LintRule.named(explain) else {
                throw ValidationError("no lint rule is called \"\(explain)\"; postgres-data lint --rules lists them")
            }
            try output.document(RuleDocument(rule))
            output.line(rule.documentationArticle)
            return
        }
        try output.document(LintRule.all.map(RuleDocument.init))
        for rule in LintRule.all {
            output.line("\(rule.id.padding(toLength: 40, withPad: " ", startingAt: 0)) \(rule.level == .style ? "style  " : rule.severity.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0)) \(rule.title)")
        }
    }

    /// A rule in JSON.
    struct RuleDocument: Encodable {
        var id, severity, level, title, why, fix, reported, safe, documentation: String
        var lock: String?

        init(_ rule: LintRule) {
            id = rule.id
            severity = rule.severity.rawValue
            level = rule.level.rawValue
            title = rule.title
            why = rule.why
            fix = rule.fix
            reported = rule.reported
            safe = rule.safe
            documentation = rule.documentationPath
            lock = rule.lock
        }
    }

    private var hasDatabase: Bool {
        common.databaseURL != nil || !(ProcessInfo.processInfo.environment["DATABASE_URL"] ?? "").isEmpty
            || !(DotEnv.read(".env")["DATABASE_URL"] ?? "").isEmpty
    }
}
