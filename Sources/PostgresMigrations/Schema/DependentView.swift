import Foundation
import PostgresClient

/// A view (or materialized view) of the live database and the columns of one table it
/// reads: what `diff` must drop and create again around a type change, and must not drop
/// a column from under.
package struct DependentView: Sendable, Hashable {
    package var name: String
    package var isMaterialized: Bool
    /// `pg_get_viewdef`: the query, without `CREATE VIEW`.
    package var definition: String
    package var table: String
    package var columns: Set<String>

    var drop: String { "DROP \(isMaterialized ? "MATERIALIZED " : "")VIEW IF EXISTS \(quoteIdentifier(name))" }
    var create: String {
        "CREATE \(isMaterialized ? "MATERIALIZED " : "")VIEW \(quoteIdentifier(name)) AS \(definition.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: CharacterSet(charactersIn: ";")))"
    }

    /// The views of the current schema and the table columns each reads.
    static func read(on connection: Connection) async throws -> [DependentView] {
        var views: [String: DependentView] = [:]
        for row in try await connection.query("""
            SELECT v.relname::text, v.relkind = 'm', pg_get_viewdef(v.oid), t.relname::text, a.attname::text
            FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_class v ON v.oid = r.ev_class
            JOIN pg_class t ON t.oid = d.refobjid JOIN pg_namespace n ON n.oid = t.relnamespace
            JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
            WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass AND v.oid <> t.oid
              AND t.relkind IN ('r', 'p') AND n.nspname = current_schema()
            ORDER BY 1, 4, 5
            """) {
            let (name, materialized, definition, table, column) = try row.decode((String, Bool, String, String, String).self)
            views["\(name)\u{0}\(table)", default: DependentView(name: name, isMaterialized: materialized, definition: definition,
                                                                  table: table, columns: [])].columns.insert(column)
        }
        return views.values.sorted { ($0.name, $0.table) < ($1.name, $1.table) }
    }
}
