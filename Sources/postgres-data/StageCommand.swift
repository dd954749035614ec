import ArgumentParser
import Foundation
import PostgresData
import PostgresMigrations

struct StageCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "stage",
        abstract: "Prints (or writes as migrations) the safe SQL between two model versions' schemas (ManagedObjectModel.schemaJSON()).",
        discussion: """
            The SQL a StagedMigrationPlan runs for a lightweight stage, in four parts: expand (one transaction: renames, \
            new tables, new columns allowing NULL, constraints NOT VALID), indexes (CREATE INDEX CONCURRENTLY IF NOT EXISTS), \
            validate (VALIDATE CONSTRAINT, SET NOT NULL through a validated CHECK) and contract (drops, IF EXISTS); \
            the last three outside a transaction. Renames keep the data: --rename-table old=new, --rename-column table.old=new \
            (the table's new name). Needs no database.
            """)

    @OptionGroup var common: CommonOptions

    @Option(name: .long, help: "The older version's schema as JSON.")
    var from: String

    @Option(name: .long, help: "The newer version's schema as JSON.")
    var to: String

    @OptionGroup var renames: RenameOptions

    @Option(name: .long, help: "Write the parts as new migrations named <name>_expand, _indexes, _validate, _contract.")
    var write: String?

    func execute(_ output: Output) async throws {
        let plan = StagePlan(from: try Self.schema(from), to: try Self.schema(to), renamedTables: try renames.tables,
                             renamedColumns: try renames.columns)
        try plan.emit(writing: write, common: common, output: output)
    }

    static func schema(_ path: String) throws -> SchemaDescription {
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read the schema file \(path)") }
        do {
            return try JSONDecoder().decode(SchemaDescription.self, from: data)
        } catch {
            throw ValidationError("\(path) is not a model schema exported by ManagedObjectModel.schemaJSON(): \(error)")
        }
    }
}
