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

    @Option(name: .customLong("rename-table"), help: "A renamed table: old=new (repeatable).")
    var renamedTables: [String] = []

    @Option(name: .customLong("rename-column"), help: "A renamed column: table.old=new, the table by its new name (repeatable).")
    var renamedColumns: [String] = []

    @Option(name: .long, help: "Write the parts as new migrations named <name>_expand, _indexes, _validate, _contract.")
    var write: String?

    func execute(_ output: Output) async throws {
        var tables: [String: String] = [:]
        for rename in renamedTables {
            let parts = rename.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw ValidationError("--rename-table takes old=new, not \(rename)")
            }
            tables[parts[0]] = parts[1]
        }
        var columns: [String: [String: String]] = [:]
        for rename in renamedColumns {
            let parts = rename.split(separator: "=", maxSplits: 1).map(String.init)
            let qualified = parts.first?.split(separator: ".", maxSplits: 1).map(String.init) ?? []
            guard parts.count == 2, qualified.count == 2, !parts[1].isEmpty else {
                throw ValidationError("--rename-column takes table.old=new, not \(rename)")
            }
            columns[qualified[0], default: [:]][qualified[1]] = parts[1]
        }
        let plan = StagePlan(from: try Self.schema(from), to: try Self.schema(to), renamedTables: tables, renamedColumns: columns)
        let parts: [(name: String, statements: [String], transactional: Bool)] = [
            ("expand", plan.expand, true), ("indexes", plan.indexes, false),
            ("validate", plan.validate, false), ("contract", plan.contract, false),
        ]
        try output.document(["expand": plan.expand, "indexes": plan.indexes, "validate": plan.validate,
                             "contract": plan.contract, "notes": plan.notes])
        if let write {
            try FileManager.default.createDirectory(atPath: common.dir, withIntermediateDirectories: true)
            for part in parts where !part.statements.isEmpty {
                let path = try common.directory().createMigration(named: "\(write)_\(part.name)")
                let body = (part.transactional ? "" : "-- migrate:no-transaction\n") + "-- migrate:up\n"
                    + part.statements.map { $0 + ";\n" }.joined()
                try body.write(toFile: path, atomically: true, encoding: .utf8)
                output.line(output.styled("created ", .green) + path)
            }
        } else if !output.json {
            for part in parts where !part.statements.isEmpty {
                print("-- \(part.name)\(part.transactional ? " (one transaction)" : " (outside a transaction)")")
                print(part.statements.map { $0 + ";" }.joined(separator: "\n"))
            }
            if parts.allSatisfy(\.statements.isEmpty) { print("-- the schemas are the same") }
        }
        for note in plan.notes { output.line("-- \(note)") }
    }

    private static func schema(_ path: String) throws -> SchemaDescription {
        guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read the schema file \(path)") }
        do {
            return try JSONDecoder().decode(SchemaDescription.self, from: data)
        } catch {
            throw ValidationError("\(path) is not a model schema exported by ManagedObjectModel.schemaJSON(): \(error)")
        }
    }
}
