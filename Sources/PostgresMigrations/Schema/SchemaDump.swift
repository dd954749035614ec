import PostgresClient
import PostgresData

/// The whole current schema as SQL, in an order that recreates it: extensions, types
/// (enums, domains, composites), standalone sequences, functions, tables with their
/// constraints, indexes and triggers, views and materialized views, SQL-standard function
/// bodies. Objects that belong to an extension are left to `CREATE EXTENSION`.
/// What `postgres-data dump` prints (as dbmate's `schema.sql`, without `pg_dump`).
enum SchemaDump {
    static func read(on connection: Connection, excluding excluded: Set<String>) async throws -> String {
        var parts: [String] = []
        func strings(_ sql: String) async throws -> [String] {
            try await connection.query(sql).map { try $0.decode(String.self, at: 0) }
        }
        let notFromExtension = "NOT EXISTS (SELECT FROM pg_depend e WHERE e.objid = %@ AND e.deptype = 'e')"
        parts += try await strings("""
            SELECT format('CREATE EXTENSION IF NOT EXISTS %I;', extname) FROM pg_extension WHERE extname <> 'plpgsql' ORDER BY extname
            """)
        parts += try await strings("""
            SELECT format('CREATE TYPE %I AS ENUM (%s);', t.typname,
                          (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid))
            FROM pg_type t WHERE t.typtype = 'e' AND t.typnamespace = current_schema()::regnamespace
              AND \(notFromExtension.replacingOccurrences(of: "%@", with: "t.oid")) ORDER BY t.oid
            """)
        parts += try await strings("""
            SELECT format('CREATE DOMAIN %I AS %s%s%s%s;', t.typname, format_type(t.typbasetype, t.typtypmod),
                          CASE WHEN t.typcollation <> 0 AND t.typcollation <> (SELECT b.typcollation FROM pg_type b WHERE b.oid = t.typbasetype)
                               THEN ' COLLATE ' || (SELECT quote_ident(c.collname) FROM pg_collation c WHERE c.oid = t.typcollation) ELSE '' END,
                          CASE WHEN t.typdefault IS NOT NULL THEN ' DEFAULT ' || t.typdefault ELSE '' END,
                          CASE WHEN t.typnotnull THEN ' NOT NULL' ELSE '' END
                          || coalesce((SELECT string_agg(' CONSTRAINT ' || quote_ident(k.conname) || ' ' || pg_get_constraintdef(k.oid), '' ORDER BY k.conname)
                                       FROM pg_constraint k WHERE k.contypid = t.oid), ''))
            FROM pg_type t WHERE t.typtype = 'd' AND t.typnamespace = current_schema()::regnamespace
              AND \(notFromExtension.replacingOccurrences(of: "%@", with: "t.oid")) ORDER BY t.oid
            """)
        parts += try await strings("""
            SELECT format('CREATE TYPE %I AS (%s);', t.typname,
                          (SELECT string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
                           FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped))
            FROM pg_type t JOIN pg_class c ON c.oid = t.typrelid
            WHERE t.typtype = 'c' AND c.relkind = 'c' AND t.typnamespace = current_schema()::regnamespace
              AND \(notFromExtension.replacingOccurrences(of: "%@", with: "t.oid")) ORDER BY t.oid
            """)
        // Sequences that no column owns (those are made by SchemaDiff.dump with their tables).
        parts += try await strings("""
            SELECT format('CREATE SEQUENCE IF NOT EXISTS %I AS %s INCREMENT BY %s MINVALUE %s MAXVALUE %s START WITH %s CACHE %s%s;',
                          s.sequencename, s.data_type, s.increment_by, s.min_value, s.max_value, s.start_value, s.cache_size,
                          CASE WHEN s.cycle THEN ' CYCLE' ELSE '' END)
            FROM pg_sequences s JOIN pg_class c ON c.relname = s.sequencename AND c.relnamespace = current_schema()::regnamespace
            WHERE s.schemaname = current_schema()
              AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i', 'e'))
            ORDER BY s.sequencename
            """)
        let functions = """
            SELECT pg_get_functiondef(p.oid) || ';' FROM pg_proc p
            WHERE p.pronamespace = current_schema()::regnamespace AND p.prokind IN ('f', 'p')
              AND \(notFromExtension.replacingOccurrences(of: "%@", with: "p.oid"))
            """
        // SQL-standard bodies (PostgreSQL 14+) are checked when created: after the tables and views.
        let hasSQLBodies = await connection.serverVersion >= 140000
        parts += try await strings(functions + (hasSQLBodies ? " AND p.prosqlbody IS NULL" : "") + " ORDER BY p.oid")
        parts.append(SchemaDiff.dump(try await LiveSchema.read(on: connection, excluding: excluded)).trimmingCharacters(in: .newlines))
        parts += try await strings("""
            SELECT format('CREATE %sVIEW %I AS%s', CASE c.relkind WHEN 'm' THEN 'MATERIALIZED ' ELSE '' END, c.relname,
                          rtrim(pg_get_viewdef(c.oid), ';') || CASE c.relkind WHEN 'm' THEN E'\\nWITH NO DATA;' ELSE ';' END)
            FROM pg_class c WHERE c.relkind IN ('v', 'm') AND c.relnamespace = current_schema()::regnamespace
              AND \(notFromExtension.replacingOccurrences(of: "%@", with: "c.oid")) ORDER BY c.oid
            """)
        if hasSQLBodies { parts += try await strings(functions + " AND p.prosqlbody IS NOT NULL ORDER BY p.oid") }
        return parts.filter { !$0.isEmpty }.joined(separator: "\n\n") + "\n"
    }
}

extension Migrator {
    /// The database's whole current schema as SQL, in an order that recreates it, without the migration
    /// history tables and the tables PostgresData's stores own.
    public func dumpSchema() async throws -> String {
        try await withConnection(role: "dump") { connection in
            try await wrap {
                try await SchemaDump.read(on: connection, excluding: Self.libraryTables.union([options.historyTable, options.historyTable + "_repeatable"]))
            }
        }
    }
}
