import PostgresClient
import PostgresData

/// The SQL that takes a live schema to the one a model expects: what `postgres-data diff`
/// prints, ready to be saved as a migration. Pure: both schemas are data.
///
/// Tables, columns, constraints and indexes are matched by name. Missing ones are created
/// (foreign keys after every table, indexes last); a column of another type is altered with
/// `USING column::type`, nullability follows the model; with `comparesDefinitions`, defaults
/// follow it too and a constraint or an index whose definition differs is dropped and added
/// again (definitions compare as text: give a target read back from the server,
/// ``Migrator/normalized(_:)``). All in one transaction, this locks tables with rows for the
/// whole migration: `postgres-data diff` writes staged migrations instead. What the live schema has and the
/// model does not is never dropped unless `includeDrops` is set: it is listed in ``notes``.
public struct SchemaDiff: Sendable {
    /// The statements, in the order to run them; empty when the schemas agree.
    public private(set) var statements: [String] = []
    /// What differs but is left alone (extra tables and columns, changed definitions).
    public private(set) var notes: [String] = []

    /// True when the live schema already is the target.
    public var isEmpty: Bool { statements.isEmpty }

    /// Compares `live` with `target`; with `comparesDefinitions`, also column defaults and
    /// the definitions of constraints and indexes, which only agree as text when `target`
    /// was read back from the server (``Migrator/normalized(_:)``).
    public init(from live: SchemaDescription, to target: SchemaDescription, includeDrops: Bool = false, comparesDefinitions: Bool = false) {
        var foreignKeys: [String] = []
        var indexes: [String] = []
        var triggers: [String] = []
        for table in target.tables {
            // Functions first (a trigger needs its function), then the trigger, then the
            // statement that brings existing rows up to date.
            let existing = live.table(named: table.name)?.triggers ?? []
            for trigger in table.triggers where !existing.contains(where: { $0.name == trigger.name }) {
                if !triggers.contains(trigger.function) { triggers.append(trigger.function) }
                triggers.append(trigger.definition)
                if let backfill = trigger.backfill, live.table(named: table.name) != nil { triggers.append(backfill) }
            }
            for trigger in existing where !table.triggers.contains(where: { $0.name == trigger.name }) {
                let drop = "DROP TRIGGER \(quoteIdentifier(trigger.name)) ON \(quoteIdentifier(table.name))"
                if includeDrops { triggers.append(drop) } else { notes.append("trigger \"\(trigger.name)\" on \"\(table.name)\" is not in the model (\(drop))") }
            }
        }
        for table in target.tables {
            let quoted = quoteIdentifier(table.name)
            guard let existing = live.table(named: table.name) else {
                statements.append(Self.createTable(table))
                foreignKeys += table.constraints.filter { $0.kind == .foreignKey }.map { Self.addConstraint($0, to: table.name) }
                indexes += table.indexes.map(\.definition)
                continue
            }
            for column in table.columns {
                guard let current = existing.columns.first(where: { $0.name == column.name }) else {
                    statements.append("ALTER TABLE \(quoted) ADD COLUMN \(Self.columnDefinition(column))")
                    continue
                }
                let name = quoteIdentifier(column.name)
                if current.type != column.type {
                    statements.append("ALTER TABLE \(quoted) ALTER COLUMN \(name) TYPE \(column.type) USING \(name)::\(column.type)")
                }
                if current.isNullable != column.isNullable {
                    statements.append("ALTER TABLE \(quoted) ALTER COLUMN \(name) \(column.isNullable ? "DROP" : "SET") NOT NULL")
                }
                if comparesDefinitions && current.defaultExpression != column.defaultExpression && !column.isIdentity && column.generationExpression == nil {
                    statements.append("ALTER TABLE \(quoted) ALTER COLUMN \(name) " + (column.defaultExpression.map { "SET DEFAULT \($0)" } ?? "DROP DEFAULT"))
                }
            }
            for column in existing.columns where !table.columns.contains(where: { $0.name == column.name }) {
                let drop = "ALTER TABLE \(quoted) DROP COLUMN \(quoteIdentifier(column.name))"
                if includeDrops { statements.append(drop) } else { notes.append("column \"\(table.name)\".\"\(column.name)\" is not in the model (\(drop))") }
            }
            for constraint in table.constraints {
                let current = existing.constraints.first { $0.name == constraint.name }
                guard current == nil || (comparesDefinitions && current?.definition != constraint.definition) else { continue }
                if current != nil { statements.append("ALTER TABLE \(quoted) DROP CONSTRAINT \(quoteIdentifier(constraint.name))") }
                let statement = Self.addConstraint(constraint, to: table.name)
                if constraint.kind == .foreignKey { foreignKeys.append(statement) } else { statements.append(statement) }
            }
            for constraint in existing.constraints where !table.constraints.contains(where: { $0.name == constraint.name }) {
                let drop = "ALTER TABLE \(quoted) DROP CONSTRAINT \(quoteIdentifier(constraint.name))"
                if includeDrops { statements.append(drop) } else { notes.append("constraint \"\(constraint.name)\" on \"\(table.name)\" is not in the model (\(drop))") }
            }
            for index in table.indexes {
                let current = existing.indexes.first { $0.name == index.name }
                guard current == nil || (comparesDefinitions && current?.definition != index.definition) else { continue }
                if current != nil { indexes.append("DROP INDEX \(quoteIdentifier(index.name))") }
                indexes.append(index.definition)
            }
            for index in existing.indexes where !table.indexes.contains(where: { $0.name == index.name }) {
                notes.append("index \"\(index.name)\" on \"\(table.name)\" is not in the model")
            }
        }
        for table in live.tables where target.table(named: table.name) == nil {
            let drop = "DROP TABLE \(quoteIdentifier(table.name))"
            if includeDrops { statements.append(drop) } else { notes.append("table \"\(table.name)\" is not in the model (\(drop))") }
        }
        statements += foreignKeys + indexes + triggers
    }

    /// The statements as a migration file's up section.
    public var sql: String {
        statements.map { $0 + ";\n" }.joined()
    }

    static func columnDefinition(_ column: SchemaDescription.Column) -> String {
        var text = "\(quoteIdentifier(column.name)) \(column.type)"
        if column.isIdentity { text += " GENERATED BY DEFAULT AS IDENTITY" }
        if let generation = column.generationExpression { text += " GENERATED ALWAYS AS (\(generation)) STORED" }
        if !column.isNullable { text += " NOT NULL" }
        if let defaultExpression = column.defaultExpression, !column.isIdentity { text += " DEFAULT \(defaultExpression)" }
        return text
    }

    static func addConstraint(_ constraint: SchemaDescription.Constraint, to table: String) -> String {
        "ALTER TABLE \(quoteIdentifier(table)) ADD CONSTRAINT \(quoteIdentifier(constraint.name)) \(constraint.definition)"
    }

    /// `CREATE TABLE` with columns and every constraint but foreign keys.
    static func createTable(_ table: SchemaDescription.Table) -> String {
        let lines = table.columns.map(columnDefinition)
            + table.constraints.filter { $0.kind != .foreignKey }.map { "CONSTRAINT \(quoteIdentifier($0.name)) \($0.definition)" }
        return "CREATE TABLE \(quoteIdentifier(table.name)) (\n    \(lines.joined(separator: ",\n    "))\n)"
    }

    /// The whole schema as SQL: tables, then foreign keys, then indexes (`postgres-data dump`).
    /// Sequences behind `nextval(…)` defaults (serial columns) are created first.
    public static func dump(_ schema: SchemaDescription) -> String {
        var sequences: [String] = []
        for column in schema.tables.flatMap(\.columns) {
            guard let expression = column.defaultExpression, expression.hasPrefix("nextval('"),
                  let end = expression.range(of: "'::regclass)") else { continue }
            let name = String(expression[expression.index(expression.startIndex, offsetBy: 9)..<end.lowerBound])
            if !sequences.contains(name) { sequences.append(name) }
        }
        return sequences.map { "CREATE SEQUENCE IF NOT EXISTS \($0);\n" }.joined()
            + SchemaDiff(from: SchemaDescription(tables: []), to: schema).sql
    }
}
