import PostgresClient
import PostgresData

/// Reads the tables, columns, constraints and indexes of the connection's current schema
/// from the system catalogs, in the shape a model's schema has (index definitions without
/// the schema `pg_get_indexdef` qualifies their table with).
enum LiveSchema {
    static func read(on connection: Connection, excluding excluded: Set<String>) async throws -> SchemaDescription {
        var tables: [String: SchemaDescription.Table] = [:]
        var order: [String] = []
        for row in try await connection.query("""
            SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
                   CASE WHEN a.attgenerated = '' THEN pg_get_expr(d.adbin, d.adrelid) END, a.attidentity <> '',
                   CASE WHEN a.attgenerated = 's' THEN pg_get_expr(d.adbin, d.adrelid) END
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
            ORDER BY c.relname, a.attnum
            """) {
            let (table, column, type, nullable, defaultExpression, identity, generation) =
                try row.decode((String, String?, String?, Bool?, String?, Bool?, String?).self)
            guard !excluded.contains(table) else { continue }
            if tables[table] == nil {
                tables[table] = SchemaDescription.Table(name: table)
                order.append(table)
            }
            if let column, let type {
                tables[table]!.columns.append(.init(name: column, type: type, isNullable: nullable ?? true,
                                                    defaultExpression: defaultExpression, isIdentity: identity ?? false,
                                                    generationExpression: generation))
            }
        }
        let kinds: [String: SchemaDescription.Constraint.Kind] = ["p": .primaryKey, "u": .unique, "c": .check, "f": .foreignKey, "x": .exclusion]
        for row in try await connection.query("""
            SELECT c.relname::text, k.conname::text, k.contype::text, pg_get_constraintdef(k.oid)
            FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = current_schema() AND k.contype IN ('p', 'u', 'c', 'f', 'x')
            ORDER BY c.relname, k.conname
            """) {
            let (table, name, type, definition) = try row.decode((String, String, String, String).self)
            guard tables[table] != nil, let kind = kinds[type] else { continue }
            tables[table]!.constraints.append(.init(name: name, kind: kind, definition: definition))
        }
        for row in try await connection.query("""
            SELECT t.relname::text, i.relname::text,
                   replace(pg_get_indexdef(x.indexrelid), ' ' || quote_ident(n.nspname) || '.' || quote_ident(t.relname) || ' ',
                           ' ' || quote_ident(t.relname) || ' ')
            FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            WHERE n.nspname = current_schema()
              AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid AND k.contype IN ('p', 'u', 'x'))
            ORDER BY t.relname, i.relname
            """) {
            let (table, name, definition) = try row.decode((String, String, String).self)
            guard tables[table] != nil else { continue }
            tables[table]!.indexes.append(.init(name: name, definition: definition))
        }
        for row in try await connection.query("""
            SELECT c.relname::text, t.tgname::text, pg_get_triggerdef(t.oid), pg_get_functiondef(t.tgfoid)
            FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = current_schema() AND NOT t.tgisinternal
            ORDER BY c.relname, t.tgname
            """) {
            let (table, name, definition, function) = try row.decode((String, String, String, String).self)
            guard tables[table] != nil else { continue }
            tables[table]!.triggers.append(.init(name: name, definition: definition, function: function))
        }
        return SchemaDescription(tables: order.map { tables[$0]! })
    }

    /// Sizes of the tables outside the system schemas, for the linter: keyed `schema.table`,
    /// and by the bare name for those the search path finds.
    static func tableSizes(on connection: Connection) async throws -> [String: TableSize] {
        var sizes: [String: TableSize] = [:]
        for row in try await connection.query("""
            SELECT n.nspname::text, c.relname::text, pg_table_is_visible(c.oid), pg_total_relation_size(c.oid),
                   greatest(c.reltuples, 0)::bigint
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
            """) {
            let (schema, name, visible, bytes, rows) = try row.decode((String, String, Bool, Int64, Int64).self)
            let size = TableSize(bytes: bytes, estimatedRows: rows)
            sizes["\(schema).\(name)"] = size
            if visible { sizes[name] = size }
        }
        return sizes
    }
}

extension Migrator {
    /// The live schema of the database, without the migration history table and the
    /// persistent-history tables PostgresData creates itself.
    public func liveSchema() async throws -> SchemaDescription {
        try await withConnection(role: "schema") { connection in
            try await wrap { try await LiveSchema.read(on: connection, excluding: Self.libraryTables.union([options.historyTable])) }
        }
    }

    /// Tables that PostgresData's stores create and own (persistent history): never part of
    /// a model's diff.
    static let libraryTables: Set<String> = ["postgres_data_history_transaction", "postgres_data_history_change"]

    /// `target` as the server writes it back: created in a schema of its own inside a
    /// transaction that is rolled back, then read from the catalogs, so that types, defaults,
    /// constraints and indexes compare with the live schema's text for text (`bool` and
    /// `boolean`, `CHECK (x > 0)` and `CHECK ((x > 0))`). Triggers keep the model's text.
    /// Needs the CREATE privilege on the database; nothing is left behind.
    public func normalized(_ target: SchemaDescription) async throws -> SchemaDescription {
        try await withConnection(role: "diff") { connection in
            var normalized = SchemaDescription(tables: [])
            do {
                try await wrap {
                    try await connection.withTransaction { (connection) async throws -> Void in
                        let shadow = "postgres_data_diff_\(UInt32.random(in: 0...UInt32.max))"
                        try await connection.execute(script: "CREATE SCHEMA \(quoteIdentifier(shadow))")
                        try await connection.query("SELECT set_config('search_path', $1 || ', ' || current_setting('search_path'), true)",
                                                   quoteIdentifier(shadow))
                        try await connection.execute(script: SchemaDiff.dump(target))
                        normalized = try await LiveSchema.read(on: connection, excluding: [])
                        throw Rollback()
                    }
                }
            } catch is Rollback {}
            for position in normalized.tables.indices {
                normalized.tables[position].triggers = target.table(named: normalized.tables[position].name)?.triggers ?? []
            }
            return normalized
        }
    }

    /// Ends the shadow schema's transaction.
    private struct Rollback: Error {}

    /// The views reading the current schema's tables, for ``SchemaDiff`` and `diff`.
    package func dependentViews() async throws -> [DependentView] {
        try await withConnection(role: "diff") { connection in try await wrap { try await DependentView.read(on: connection) } }
    }

    /// The columns no NULL can be in — NOT NULL, or covered by a validated
    /// `CHECK (column IS NOT NULL)` — for ``MigrationLinter/provenNotNull``: keyed
    /// `schema.table.column`, and `table.column` for tables on the search path.
    public func provenNotNullColumns() async throws -> Set<String> {
        try await withConnection(role: "lint") { connection in
            try await wrap {
                var columns: Set<String> = []
                for row in try await connection.query("""
                    SELECT n.nspname::text, c.relname::text, a.attname::text, pg_table_is_visible(c.oid)
                    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
                      AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
                      AND (a.attnotnull OR EXISTS (
                          SELECT FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'c' AND k.convalidated
                            AND k.conkey = ARRAY[a.attnum]
                            AND regexp_replace(pg_get_constraintdef(k.oid), '[()]', '', 'g') = 'CHECK ' || quote_ident(a.attname) || ' IS NOT NULL'))
                    """) {
                    let (schema, table, column, visible) = try row.decode((String, String, String, Bool).self)
                    columns.insert("\(schema).\(table).\(column)")
                    if visible { columns.insert("\(table).\(column)") }
                }
                return columns
            }
        }
    }

    /// Sizes of the live tables, for ``MigrationLinter/tableSizes``.
    public func tableSizes() async throws -> [String: TableSize] {
        try await withConnection(role: "lint") { connection in try await wrap { try await LiveSchema.tableSizes(on: connection) } }
    }
}
