import ArgumentParser
import Foundation
import PostgresData
import PostgresMigrations

struct DiffCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Prints (or writes as migrations) the SQL that takes the database's schema to a model's (ManagedObjectModel.schemaJSON()).",
        discussion: """
            The SQL is split as a populated, serving database needs it: expand (one transaction: new tables, new columns \
            allowing NULL, changed defaults, CHECK and foreign keys NOT VALID, type changes with the views that read the \
            column dropped and created again around them), indexes (CREATE INDEX CONCURRENTLY IF NOT EXISTS; a changed index \
            built beside the old one and swapped), validate (VALIDATE CONSTRAINT, SET NOT NULL through a validated CHECK, \
            unique constraints attached to their index) and contract (drops, only with --include-drops). --write NAME writes \
            each part as the next migration; lint --strict finds nothing in them (a statement with no safe form, such as a \
            type change, carries a '-- lint:ignore' comment saying why). The model's definitions are compared with the \
            database's as the server writes them (created in a schema of their own inside a transaction rolled back). \
            --one-file writes one transactional file instead (for an empty database). An app can do the same without the \
            tool: SchemaDiff(from: try await migrator.liveSchema(), to: model.schemaDescription).
            """)

    @OptionGroup var common: CommonOptions

    @Option(name: .long, help: "The model's schema as JSON (ManagedObjectModel.schemaJSON()).")
    var model: String

    @Flag(name: .long, help: "Drop tables, columns, constraints and indexes the model does not have (in the contract part).")
    var includeDrops = false

    @OptionGroup var renames: RenameOptions

    @Flag(name: .long, help: "One transactional file, statements as SchemaDiff plans them (locks tables with rows: for an empty database).")
    var oneFile = false

    @Option(name: .long, help: "Write the SQL as new migrations named after this instead of printing it.")
    var write: String?

    @Flag(name: .long, help: "Exit with 3 when the schemas differ.")
    var exitCode = false

    func execute(_ output: Output) async throws {
        let target = try StageCommand.schema(model)
        let migrator = try migrator(needsFiles: false)
        let live = try await migrator.liveSchema()
        let normalized = try await migrator.normalized(target)
        if oneFile {
            let diff = SchemaDiff(from: live, to: normalized, includeDrops: includeDrops, comparesDefinitions: true)
            try output.document(["statements": diff.statements, "notes": diff.notes])
            if let write, !diff.isEmpty {
                try FileManager.default.createDirectory(atPath: common.dir, withIntermediateDirectories: true)
                let path = try common.directory().createMigration(named: write, contents: "-- migrate:up\n" + diff.sql + "\n-- migrate:down\n\n")
                output.line(output.styled("created ", .green) + path)
            } else if !output.json {
                print(diff.isEmpty ? "-- the database matches the model\n" : diff.sql, terminator: "")
            }
            for note in diff.notes { output.line("-- \(note)") }
            if exitCode && !diff.isEmpty { throw ExitCode(3) }
            return
        }
        let plan = StagePlan(from: live, to: normalized, renamedTables: try renames.tables,
                             renamedColumns: try renames.columns, views: try await migrator.dependentViews(), includeDrops: includeDrops)
        try plan.emit(writing: write, common: common, output: output)
        if exitCode && plan.parts.contains(where: { !$0.statements.isEmpty }) { throw ExitCode(3) }
    }
}

struct DumpCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Prints (or writes to --output) the database's schema as SQL: extensions, types, sequences, functions, tables, views, triggers.",
        discussion: """
            Commit the file (as dbmate's schema.sql) to review what each migration did to the schema. --tables-only prints only \
            tables, constraints and indexes as the model compares them. pg_dump --schema-only gives the same with grants, \
            comments and every schema.
            """)

    @OptionGroup var common: CommonOptions

    @Option(name: .long, help: "Write the SQL to this file instead of printing it.")
    var output: String?

    @Flag(name: .long, help: "Only tables, constraints and indexes.")
    var tablesOnly = false

    func execute(_ printer: Output) async throws {
        let migrator = try migrator(needsFiles: false)
        if printer.json {
            try printer.document(try await migrator.liveSchema())
            return
        }
        let sql = tablesOnly ? SchemaDiff.dump(try await migrator.liveSchema()) : try await migrator.dumpSchema()
        if let output {
            try sql.write(toFile: output, atomically: true, encoding: .utf8)
            printer.line(printer.styled("wrote ", .green) + output)
        } else {
            print(sql, terminator: "")
        }
    }
}
