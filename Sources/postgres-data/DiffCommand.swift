import ArgumentParser
import Foundation
import PostgresData
import PostgresMigrations

struct DiffCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Prints the SQL that takes the database's schema to a model's (exported with ManagedObjectModel.schemaJSON()).",
        discussion: """
            An app can do the same without the tool: SchemaDiff(from: try await migrator.liveSchema(), to: model.schemaDescription). \
            Nothing the model lacks is dropped unless --include-drops is given; such differences are listed as comments.
            """)

    @OptionGroup var common: CommonOptions

    @Option(name: .long, help: "The model's schema as JSON (ManagedObjectModel.schemaJSON()).")
    var model: String

    @Flag(name: .long, help: "Drop tables, columns and constraints the model does not have.")
    var includeDrops = false

    @Option(name: .long, help: "Write the SQL as a new migration with this name instead of printing it.")
    var write: String?

    @Flag(name: .long, help: "Exit with 3 when the schemas differ.")
    var exitCode = false

    func execute(_ output: Output) async throws {
        guard let data = FileManager.default.contents(atPath: model) else {
            throw ValidationError("cannot read the model file \(model)")
        }
        let target: SchemaDescription
        do {
            target = try JSONDecoder().decode(SchemaDescription.self, from: data)
        } catch {
            throw ValidationError("\(model) is not a model schema exported by ManagedObjectModel.schemaJSON(): \(error)")
        }
        let diff = SchemaDiff(from: try await migrator(needsFiles: false).liveSchema(), to: target, includeDrops: includeDrops)
        try output.document(["statements": diff.statements, "notes": diff.notes])
        if let write, !diff.isEmpty {
            try FileManager.default.createDirectory(atPath: common.dir, withIntermediateDirectories: true)
            let path = try common.directory().createMigration(named: write)
            let body = "-- migrate:up\n" + diff.sql + "\n-- migrate:down\n\n"
            try body.write(toFile: path, atomically: true, encoding: .utf8)
            output.line(output.styled("created ", .green) + path)
        } else if !output.json {
            print(diff.isEmpty ? "-- the database matches the model\n" : diff.sql, terminator: "")
        }
        for note in diff.notes { output.line("-- \(note)") }
        if exitCode && !diff.isEmpty { throw ExitCode(3) }
    }
}

struct DumpCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Prints the database's tables, constraints and indexes as SQL (for views, functions and types, use pg_dump --schema-only).")

    @OptionGroup var common: CommonOptions

    func execute(_ output: Output) async throws {
        let schema = try await migrator(needsFiles: false).liveSchema()
        try output.document(schema)
        if !output.json { print(SchemaDiff.dump(schema), terminator: "") }
    }
}
