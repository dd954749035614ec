import ArgumentParser
import PostgresMigrations

struct PlanCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Shows what up (or, with --down, down) would run, with the SQL, without running it.")

    @OptionGroup var common: CommonOptions

    @Flag(name: .long, help: "Plan a down instead of an up.")
    var down = false

    @Option(name: .long, help: "up: stop after this version; down: revert every migration above it.")
    var to: String?

    @Option(name: .long, help: "down: how many migrations to revert.")
    var steps: Int?

    @Flag(name: .long, help: "up: include pending migrations lower than an applied one.")
    var allowOutOfOrder = false

    struct Step: Encodable {
        var version: String
        var file: String
        var transactional: Bool
        var sql: String
    }

    func execute(_ output: Output) async throws {
        let planner = try await migrator().planner()
        let target = try to.map(parseVersion)
        let steps: [Step]
        if down {
            steps = try planner.downPlan(steps: self.steps, to: target).map {
                Step(version: $0.0.version.text, file: $0.0.fileName, transactional: $0.0.isTransactional, sql: $0.0.down?.sql ?? "")
            }
        } else {
            let repeatables = target == nil ? try await migrator().pendingRepeatables() : []
            steps = try (planner.upPlan(to: target, allowOutOfOrder: allowOutOfOrder) + repeatables).map {
                Step(version: $0.isRepeatable ? "R" : $0.version.text, file: $0.fileName, transactional: $0.isTransactional, sql: $0.up.sql)
            }
        }
        try output.document(PlanDocument(direction: down ? "down" : "up", steps: steps))
        if steps.isEmpty { output.line(down ? "nothing to revert" : "nothing to apply: the database is up to date") }
        for step in steps {
            output.line(output.styled("-- \(down ? "revert" : "apply") \(step.file)\(step.transactional ? "" : " (no transaction)")", .cyan))
            output.line(step.sql.trimmingCharacters(in: .whitespacesAndNewlines) + "\n")
        }
    }
}

/// `{"direction": …, "steps": […]}`.
struct PlanDocument: Encodable {
    var direction: String
    var steps: [PlanCommand.Step]
}
