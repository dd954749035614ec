import Foundation
import PostgresClient

/// The table recording the repeatable migrations applied: one row per file name, with the
/// checksum it was last applied with (`<history table>_repeatable`).
///
/// ```sql
/// CREATE TABLE postgres_data_migrations_repeatable (
///     name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL,
///     duration_ms bigint NOT NULL, applied_by text NOT NULL)
/// ```
struct RepeatableHistory: Sendable {
    let table: String
    private var quoted: String { quoteIdentifier(table) }

    /// Creates the table unless it exists (with the migration lock held).
    func create(on connection: Connection) async throws {
        try await connection.execute(script: """
            CREATE TABLE IF NOT EXISTS \(quoted) (
                name text PRIMARY KEY,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now(),
                duration_ms bigint NOT NULL,
                applied_by text NOT NULL
            )
            """)
    }

    /// File name → the checksum it was last applied with; empty when the table does not exist.
    func checksums(on connection: Connection) async throws -> [String: MigrationChecksum] {
        guard try await connection.query("SELECT to_regclass($1) IS NOT NULL", quoted)[0].decode(Bool.self, at: 0) else { return [:] }
        var checksums: [String: MigrationChecksum] = [:]
        for row in try await connection.query("SELECT name, checksum FROM \(quoted)") {
            let (name, checksum) = try row.decode((String, String).self)
            checksums[name] = MigrationChecksum(text: checksum)
        }
        return checksums
    }

    func record(_ migration: Migration, duration: Duration, appliedBy: String, on connection: Connection) async throws {
        try await connection.query("""
            INSERT INTO \(quoted) (name, checksum, duration_ms, applied_by) VALUES ($1, $2, $3, $4)
            ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now(),
                duration_ms = excluded.duration_ms, applied_by = excluded.applied_by
            """, migration.fileName, migration.checksum.text, duration.milliseconds, appliedBy)
    }
}
