import PostgresClient
import PostgresData

/// The SQL of one stage, from one model version's schema to the next, in the order that
/// keeps a populated database available: pure planning, tested without a server.
///
/// - ``expand`` (one transaction, short locks): renames, new tables, new columns (allowing
///   NULL), a dropped column's NOT NULL lifted, `CHECK` and foreign-key constraints
///   `NOT VALID`, type changes, triggers.
/// - ``indexes`` (outside a transaction, one statement at a time): `CREATE INDEX
///   CONCURRENTLY IF NOT EXISTS`, also for unique constraints.
/// - (a custom stage's code runs here)
/// - ``validate`` (outside a transaction): `VALIDATE CONSTRAINT` (a scan that blocks no
///   writes), unique constraints attached to their index, `SET NOT NULL` through a
///   validated `CHECK (… IS NOT NULL)` (no second scan).
/// - ``contract`` (outside a transaction): what the new version no longer has is dropped,
///   `IF EXISTS`, indexes concurrently.
///
/// Every statement outside a transaction can run twice harmlessly, so a run that dies
/// resumes after the last one recorded.
package struct StagePlan: Sendable {
    package var expand: [String] = []
    package var indexes: [String] = []
    package var validate: [String] = []
    package var contract: [String] = []
    /// What the plan leaves alone or does at a cost (a type change rewrites its table).
    package var notes: [String] = []
    /// Statements that lint reports by nature (a type change, a drop), with the rule and why
    /// the plan needs them anyway: a written migration carries it as `-- lint:ignore`.
    package var reviewed: [String: (rule: String, reason: String)] = [:]

    /// The stage between two model versions, their renames read from the newer one.
    init(from old: ModelVersion, to new: ModelVersion) {
        var tables: [String: String] = [:]
        var columns: [String: [String: String]] = [:]
        var notes: [String] = []
        for entity in new.model.entities {
            let previousName = new.renamedEntities[entity.name] ?? entity.name
            guard let previous = old.model.entitiesByName[previousName] else { continue }
            if previous.tableName != entity.tableName { tables[previous.tableName] = entity.tableName }
            // Join tables are named after their entities and relationships: renamed with them.
            let renamed = new.renamedProperties[entity.name] ?? [:]
            for (index, property) in entity.properties.enumerated() {
                guard let join = entity.joinTable(of: index),
                      let oldIndex = previous.propertyIndex(named: renamed[property.name] ?? property.name),
                      let oldJoin = previous.joinTable(of: oldIndex) else { continue }
                if oldJoin.name != join.name { tables[oldJoin.name] = join.name }
                if oldJoin.sourceColumn != join.sourceColumn { columns[join.name, default: [:]][oldJoin.sourceColumn] = join.sourceColumn }
                if oldJoin.destinationColumn != join.destinationColumn {
                    columns[join.name, default: [:]][oldJoin.destinationColumn] = join.destinationColumn
                }
            }
            for (newName, oldName) in renamed {
                guard let newIndex = entity.propertyIndex(named: newName), let oldIndex = previous.propertyIndex(named: oldName),
                      entity.columnIndices.contains(newIndex), previous.columnIndices.contains(oldIndex) else {
                    notes.append("\(entity.name).\(newName) ← \(oldName): not a stored attribute or to-one relationship of both versions; not renamed")
                    continue
                }
                let from = previous.columnName(of: oldIndex), to = entity.columnName(of: newIndex)
                if from != to { columns[entity.tableName, default: [:]][from] = to }
            }
        }
        self.init(from: old.model.schemaDescription, to: new.model.schemaDescription, renamedTables: tables, renamedColumns: columns)
        self.notes = notes + self.notes
    }

    /// The stage between two schemas: `renamedTables` old name → new name, `renamedColumns`
    /// by the table's new name, old column name → new name.
    /// `views` are the live views reading the old schema's columns: they are dropped and
    /// created again around a type change, and keep a dropped column or table alive.
    /// Without `includeDrops`, what the new schema lacks is listed in ``notes``, not dropped.
    package init(from old: SchemaDescription, to after: SchemaDescription, renamedTables: [String: String] = [:],
                 renamedColumns: [String: [String: String]] = [:], views: [DependentView] = [], includeDrops: Bool = true) {
        var before = old
        renames(renamedTables, renamedColumns, in: &before, target: after)
        var foreignKeys: [String] = []
        for table in after.tables {
            let quoted = quoteIdentifier(table.name)
            guard let existing = before.table(named: table.name) else {
                expand.append(SchemaDiff.createTable(table))
                for constraint in table.constraints where constraint.kind == .foreignKey {
                    foreignKeys.append("ALTER TABLE \(quoted) ADD CONSTRAINT \(quoteIdentifier(constraint.name)) \(constraint.definition) NOT VALID")
                    validate.append("ALTER TABLE \(quoted) VALIDATE CONSTRAINT \(quoteIdentifier(constraint.name))")
                }
                indexes += table.indexes.map { Self.concurrently($0.definition) }
                continue
            }
            for column in table.columns {
                let name = quoteIdentifier(column.name)
                guard let current = existing.columns.first(where: { $0.name == column.name }) else {
                    var added = column
                    added.isNullable = true
                    expand.append("ALTER TABLE \(quoted) ADD COLUMN \(SchemaDiff.columnDefinition(added))")
                    if !column.isNullable { requireNotNull(table.name, column.name) }
                    continue
                }
                if current.type != column.type {
                    let readers = views.filter { $0.table == table.name && $0.columns.contains(column.name) }
                    expand += readers.map(\.drop)
                    let alter = "ALTER TABLE \(quoted) ALTER COLUMN \(name) TYPE \(column.type) USING \(name)::\(column.type)"
                    expand.append(alter)
                    expand += readers.map(\.create)
                    reviewed[alter] = ("column-type-change", "\(current.type) → \(column.type) has no lock-free form under one name; on a big table, add a column of the new type and backfill it instead")
                    notes.append("\(table.name).\(column.name) changes type (\(current.type) → \(column.type)): the table is rewritten under an exclusive lock"
                                 + (readers.isEmpty ? "" : "; the views \(readers.map(\.name).joined(separator: ", ")) are dropped and created again around it"))
                }
                if current.defaultExpression != column.defaultExpression && !column.isIdentity && column.generationExpression == nil {
                    // A catalog change: no scan, no rewrite.
                    expand.append("ALTER TABLE \(quoted) ALTER COLUMN \(name) " + (column.defaultExpression.map { "SET DEFAULT \($0)" } ?? "DROP DEFAULT"))
                }
                if current.isNullable && !column.isNullable {
                    requireNotNull(table.name, column.name)
                } else if !current.isNullable && column.isNullable {
                    let drop = "ALTER TABLE \(quoted) ALTER COLUMN \(name) DROP NOT NULL"
                    expand.append(drop)
                    reviewed[drop] = ("drop-not-null", "the new version's model allows NULL here; deploy it after every reader handles NULL")
                }
            }
            for column in existing.columns where !table.columns.contains(where: { $0.name == column.name }) {
                let readers = views.filter { $0.table == table.name && $0.columns.contains(column.name) }
                guard includeDrops, readers.isEmpty else {
                    notes.append("column \"\(table.name)\".\"\(column.name)\" is not in the new schema; "
                                 + (readers.isEmpty ? "kept (drops need --include-drops)" : "kept: the views \(readers.map(\.name).joined(separator: ", ")) read it; redefine them first"))
                    continue
                }
                // Writers of the new version do not set it: it must not be required meanwhile.
                if !column.isNullable && column.defaultExpression == nil && !column.isIdentity {
                    let drop = "ALTER TABLE \(quoted) ALTER COLUMN \(quoteIdentifier(column.name)) DROP NOT NULL"
                    expand.append(drop)
                    reviewed[drop] = ("drop-not-null", "the new version no longer writes this column, which is dropped in the contract step")
                }
                let drop = "ALTER TABLE \(quoted) DROP COLUMN IF EXISTS \(quoteIdentifier(column.name))"
                contract.append(drop)
                reviewed[drop] = ("drop-column", "contract: run once no instance of the previous version is running")
            }
            for constraint in table.constraints where !existing.constraints.contains(where: { $0.name == constraint.name }) {
                let constraintName = quoteIdentifier(constraint.name)
                switch constraint.kind {
                case .check, .foreignKey:
                    let statement = "ALTER TABLE \(quoted) ADD CONSTRAINT \(constraintName) \(constraint.definition) NOT VALID"
                    if constraint.kind == .foreignKey { foreignKeys.append(statement) } else { expand.append(statement) }
                    validate.append("ALTER TABLE \(quoted) VALIDATE CONSTRAINT \(constraintName)")
                case .unique, .primaryKey:
                    // Built concurrently, then made the constraint (a rename of the index).
                    let columns = constraint.definition.drop { $0 != "(" }
                    let kind = constraint.kind == .unique ? "UNIQUE" : "PRIMARY KEY"
                    indexes.append("CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS \(constraintName) ON \(quoted) \(columns)")
                    validate.append("""
                        DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_constraint WHERE conname = \(quoteLiteral(constraint.name)) \
                        AND conrelid = \(quoteLiteral(quoted))::regclass) THEN \
                        ALTER TABLE \(quoted) ADD CONSTRAINT \(constraintName) \(kind) USING INDEX \(constraintName); END IF; END $$
                        """)
                case .exclusion:
                    let add = "ALTER TABLE \(quoted) ADD CONSTRAINT \(constraintName) \(constraint.definition)"
                    expand.append(add)
                    reviewed[add] = ("exclude-constraint", "PostgreSQL has no NOT VALID form for it; on a big table, run this step in a quiet window")
                    notes.append("\(table.name): the exclusion constraint \(constraint.name) is built under an exclusive lock")
                }
            }
            for constraint in table.constraints {
                guard let current = existing.constraints.first(where: { $0.name == constraint.name }),
                      current.definition != constraint.definition else { continue }
                let constraintName = quoteIdentifier(constraint.name)
                if [.check, .foreignKey].contains(constraint.kind) && current.kind == constraint.kind {
                    // Replaced in one transaction without a scan; old rows are checked by VALIDATE.
                    expand.append("ALTER TABLE \(quoted) DROP CONSTRAINT IF EXISTS \(constraintName)")
                    expand.append("ALTER TABLE \(quoted) ADD CONSTRAINT \(constraintName) \(constraint.definition) NOT VALID")
                    validate.append("ALTER TABLE \(quoted) VALIDATE CONSTRAINT \(constraintName)")
                } else {
                    notes.append("constraint \"\(constraint.name)\" on \"\(table.name)\" differs (\(current.definition) → \(constraint.definition)); "
                                 + "a unique, primary-key or exclusion constraint is not replaced automatically: build the new index concurrently and swap by hand")
                }
            }
            for constraint in existing.constraints where !table.constraints.contains(where: { $0.name == constraint.name }) {
                guard includeDrops else {
                    notes.append("constraint \"\(constraint.name)\" on \"\(table.name)\" is not in the new schema; kept (drops need --include-drops)")
                    continue
                }
                contract.append("ALTER TABLE \(quoted) DROP CONSTRAINT IF EXISTS \(quoteIdentifier(constraint.name))")
            }
            for index in table.indexes {
                guard let current = existing.indexes.first(where: { $0.name == index.name }) else {
                    indexes.append(Self.concurrently(index.definition))
                    continue
                }
                guard current.definition != index.definition else { continue }
                // Built beside the old one, then swapped: each step can run again after a kill.
                let temporary = String(index.name.prefix(56)) + "_pd_new"
                indexes.append(Self.concurrently(Self.renamed(index.definition, to: temporary)))
                indexes.append("DROP INDEX CONCURRENTLY IF EXISTS \(quoteIdentifier(index.name))")
                indexes.append("ALTER INDEX IF EXISTS \(quoteIdentifier(temporary)) RENAME TO \(quoteIdentifier(index.name))")
            }
            for index in existing.indexes where !table.indexes.contains(where: { $0.name == index.name }) {
                guard includeDrops else {
                    notes.append("index \"\(index.name)\" on \"\(table.name)\" is not in the new schema; kept (drops need --include-drops)")
                    continue
                }
                contract.append("DROP INDEX CONCURRENTLY IF EXISTS \(quoteIdentifier(index.name))")
            }
            let triggers = existing.triggers
            for trigger in table.triggers where !triggers.contains(where: { $0.name == trigger.name }) {
                expand.append(trigger.function)
                expand.append(trigger.definition)
                if let backfill = trigger.backfill { expand.append(backfill) }
            }
            for trigger in triggers where !table.triggers.contains(where: { $0.name == trigger.name }) {
                contract.append("DROP TRIGGER IF EXISTS \(quoteIdentifier(trigger.name)) ON \(quoted)")
            }
        }
        expand += foreignKeys
        for table in before.tables where after.table(named: table.name) == nil {
            let readers = views.filter { $0.table == table.name }
            guard includeDrops, readers.isEmpty else {
                notes.append("table \"\(table.name)\" is not in the new schema; "
                             + (readers.isEmpty ? "kept (drops need --include-drops)" : "kept: the views \(readers.map(\.name).joined(separator: ", ")) read it"))
                continue
            }
            let drop = "DROP TABLE IF EXISTS \(quoteIdentifier(table.name))"
            contract.append(drop)
            reviewed[drop] = ("drop-table", "contract: run once no instance of the previous version is running")
        }
    }

    /// The parts in the order they run: name, statements, and whether one transaction holds them.
    package var parts: [(name: String, statements: [String], isTransactional: Bool)] {
        [("expand", expand, true), ("indexes", indexes, false), ("validate", validate, false), ("contract", contract, false)]
    }

    /// A part's statements as a migration's up section, reviewed ones preceded by the
    /// `-- lint:ignore` comment that says why they are needed.
    package func sql(_ statements: [String]) -> String {
        statements.map { statement in
            (reviewed[statement].map { "-- lint:ignore \($0.rule) — \($0.reason)\n" } ?? "") + statement + ";\n"
        }.joined()
    }

    /// `CREATE [UNIQUE] INDEX <name> ON …` with another name.
    static func renamed(_ definition: String, to name: String) -> String {
        guard let on = definition.range(of: " ON ") else { return definition }
        let head = definition[..<on.lowerBound]
        let prefix = head.hasPrefix("CREATE UNIQUE INDEX") ? "CREATE UNIQUE INDEX" : "CREATE INDEX"
        return "\(prefix) \(quoteIdentifier(name))" + definition[on.lowerBound...]
    }

    /// `SET NOT NULL` without a second scan: a `CHECK` validated first, then dropped.
    private mutating func requireNotNull(_ table: String, _ column: String) {
        let quoted = quoteIdentifier(table)
        let check = quoteIdentifier(String("\(table)_\(column)_not_null".prefix(63)))
        expand.append("ALTER TABLE \(quoted) ADD CONSTRAINT \(check) CHECK (\(quoteIdentifier(column)) IS NOT NULL) NOT VALID")
        validate.append("ALTER TABLE \(quoted) VALIDATE CONSTRAINT \(check)")
        validate.append("ALTER TABLE \(quoted) ALTER COLUMN \(quoteIdentifier(column)) SET NOT NULL")
        validate.append("ALTER TABLE \(quoted) DROP CONSTRAINT IF EXISTS \(check)")
    }

    /// Renames of the stage, in ``expand``, applied to `schema` (the old version's) so that
    /// the rest compares like with like. Constraints and indexes named after a renamed
    /// table or column are renamed to the new version's names.
    private mutating func renames(_ tables: [String: String], _ columns: [String: [String: String]],
                                  in schema: inout SchemaDescription, target: SchemaDescription) {
        for (from, to) in tables.sorted(by: { $0.key < $1.key }) {
            guard let position = schema.tables.firstIndex(where: { $0.name == from }) else {
                notes.append("table \(from) → \(to): no table \(from) in the old schema; not renamed")
                continue
            }
            expand.append("ALTER TABLE \(quoteIdentifier(from)) RENAME TO \(quoteIdentifier(to))")
            schema.tables[position].name = to
            renameDependents(in: &schema.tables[position], from: from, to: to, target: target.table(named: to))
        }
        for (table, renamed) in columns.sorted(by: { $0.key < $1.key }) {
            for (from, to) in renamed.sorted(by: { $0.key < $1.key }) {
                guard let position = schema.tables.firstIndex(where: { $0.name == table }),
                      let column = schema.tables[position].columns.firstIndex(where: { $0.name == from }) else {
                    notes.append("column \(table).\(from) → \(to): no such column in the old schema; not renamed")
                    continue
                }
                expand.append("ALTER TABLE \(quoteIdentifier(table)) RENAME COLUMN \(quoteIdentifier(from)) TO \(quoteIdentifier(to))")
                schema.tables[position].columns[column].name = to
                renameDependents(in: &schema.tables[position], from: "_\(from)", to: "_\(to)", target: target.table(named: table))
            }
        }
    }

    /// Constraints and indexes of `table` whose names contain `from` (the table's or a
    /// column's part of the name) take `to` instead, when the new version names one so.
    private mutating func renameDependents(in table: inout SchemaDescription.Table, from: String, to: String,
                                           target: SchemaDescription.Table?) {
        let name = table.name
        for position in table.constraints.indices where table.constraints[position].name.contains(from) {
            let renamed = table.constraints[position].name.replacingOccurrences(of: from, with: to)
            guard target?.constraints.contains(where: { $0.name == renamed }) == true else { continue }
            expand.append("ALTER TABLE \(quoteIdentifier(name)) RENAME CONSTRAINT \(quoteIdentifier(table.constraints[position].name)) TO \(quoteIdentifier(renamed))")
            table.constraints[position].name = renamed
        }
        for position in table.indexes.indices where table.indexes[position].name.contains(from) {
            let renamed = table.indexes[position].name.replacingOccurrences(of: from, with: to)
            guard target?.indexes.contains(where: { $0.name == renamed }) == true else { continue }
            expand.append("ALTER INDEX \(quoteIdentifier(table.indexes[position].name)) RENAME TO \(quoteIdentifier(renamed))")
            table.indexes[position].name = renamed
        }
    }

    /// `CREATE [UNIQUE] INDEX name ON …` made concurrent and repeatable.
    static func concurrently(_ definition: String) -> String {
        for prefix in ["CREATE UNIQUE INDEX ", "CREATE INDEX "] where definition.hasPrefix(prefix) {
            var rest = definition.dropFirst(prefix.count)
            if rest.hasPrefix("IF NOT EXISTS ") { rest = rest.dropFirst("IF NOT EXISTS ".count) }
            return prefix + "CONCURRENTLY IF NOT EXISTS " + rest
        }
        return definition
    }
}
