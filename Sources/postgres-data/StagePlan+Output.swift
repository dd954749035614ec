import ArgumentParser
import Foundation
import PostgresMigrations

/// `--rename-table old=new` and `--rename-column table.old=new`, for `stage` and `diff`.
struct RenameOptions: ParsableArguments {
    @Option(name: .customLong("rename-table"), help: "A renamed table: old=new (repeatable).")
    var renamedTables: [String] = []

    @Option(name: .customLong("rename-column"), help: "A renamed column: table.old=new, the table by its new name (repeatable).")
    var renamedColumns: [String] = []

    var tables: [String: String] {
        get throws {
            var tables: [String: String] = [:]
            for rename in renamedTables {
                let parts = rename.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                    throw ValidationError("--rename-table takes old=new, not \(rename)")
                }
                tables[parts[0]] = parts[1]
            }
            return tables
        }
    }

    var columns: [String: [String: String]] {
        get throws {
            var columns: [String: [String: String]] = [:]
            for rename in renamedColumns {
                let parts = rename.split(separator: "=", maxSplits: 1).map(String.init)
                let qualified = parts.first?.split(separator: ".", maxSplits: 1).map(String.init) ?? []
                guard parts.count == 2, qualified.count == 2, !parts[1].isEmpty else {
                    throw ValidationError("--rename-column takes table.old=new, not \(rename)")
                }
                columns[qualified[0], default: [:]][qualified[1]] = parts[1]
            }
            return columns
        }
    }
}

extension StagePlan {
    /// Prints the parts (or, with `name`, writes each non-empty one as the next migration,
    /// `<name>_expand`, `_indexes`, `_validate`, `_contract`), then the notes.
    func emit(writing name: String?, common: CommonOptions, output: Output) throws {
        try output.document(["expand": expand, "indexes": indexes, "validate": validate, "contract": contract, "notes": notes])
        if let name {
            try FileManager.default.createDirectory(atPath: common.dir, withIntermediateDirectories: true)
            for part in parts where !part.statements.isEmpty {
                let body = (part.isTransactional ? "" : "-- migrate:no-transaction\n") + "-- migrate:up\n" + sql(part.statements)
                let path = try common.directory().createMigration(named: "\(name)_\(part.name)", contents: body)
                output.line(output.styled("created ", .green) + path)
            }
        } else if !output.json {
            for part in parts where !part.statements.isEmpty {
                print("-- \(part.name)\(part.isTransactional ? " (one transaction)" : " (outside a transaction, one statement at a time)")")
                print(sql(part.statements), terminator: "")
            }
            if parts.allSatisfy(\.statements.isEmpty) { print("-- the schemas are the same") }
        }
        for note in notes { output.line("-- \(note)") }
    }
}
