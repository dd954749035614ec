import Foundation
import PostgresClient

/// The history table: which migrations a database has, read and written by the runner.
///
/// ```sql
/// CREATE TABLE postgres_data_migrations (
///     version text PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
///     kind text NOT NULL, applied_at timestamptz NOT NULL, duration_ms bigint,
///     applied_by text NOT NULL, statements_applied integer, complete boolean NOT NULL)
/// ```
struct MigrationHistory: Sendable {
    /// The table's name (quoted when used).
    let table: String

    private var quoted: String { quoteIdentifier(table) }

    /// Creates the table unless it exists (called with the migration lock held).
    func create(on connection: Connection) async throws {
        guard try await !exists(on: connection) else { return }
        try await connection.execute(script: """
            CREATE TABLE \(quoted) (
                version text PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                kind text NOT NULL DEFAULT 'migration' CHECK (kind IN ('migration', 'baseline')),
                applied_at timestamptz NOT NULL DEFAULT now(),
                duration_ms bigint,
                applied_by text NOT NULL,
                statements_applied integer,
                complete boolean NOT NULL DEFAULT true
            )
            """)
    }

    func exists(on connection: Connection) async throws -> Bool {
        try await connection.query("SELECT to_regclass($1) IS NOT NULL", quoted)[0].decode(Bool.self, at: 0)
    }

    /// Every row, in version order; empty when the table does not exist.
    func rows(on connection: Connection) async throws -> [AppliedMigration] {
        guard try await exists(on: connection) else { return [] }
        let rows = try await connection.query("""
            SELECT version, name, checksum, kind, applied_at, duration_ms, applied_by, statements_applied, complete FROM \(quoted)
            """)
        return try rows.map { row in
            let (version, name, checksum, kind, appliedAt, duration, appliedBy, statements, complete) =
                try row.decode((String, String, String, String, Date, Int64?, String, Int32?, Bool).self)
            guard let parsed = MigrationVersion(version) else {
                throw MigrationError.invalidFile(file: table, line: nil, message: "the history table has a row with the version \"\(version)\", which is not all digits")
            }
            return AppliedMigration(version: parsed, name: name, checksum: MigrationChecksum(text: checksum),
                                    kind: AppliedMigration.Kind(rawValue: kind) ?? .migration, appliedAt: appliedAt,
                                    duration: duration.map { .milliseconds($0) }, appliedBy: appliedBy,
                                    statementsApplied: statements.map(Int.init), isComplete: complete)
        }.sorted { $0.version < $1.version }
    }

    func recordApplied(_ migration: Migration, kind: AppliedMigration.Kind = .migration, duration: Duration,
                       appliedBy: String, on connection: Connection) async throws {
        try await connection.query("""
            INSERT INTO \(quoted) (version, name, checksum, kind, duration_ms, applied_by) VALUES ($1, $2, $3, $4, $5, $6)
            """, migration.version.text, migration.name, migration.checksum.text, kind.rawValue, duration.milliseconds, appliedBy)
    }

    func recordBaseline(_ version: MigrationVersion, name: String, checksum: MigrationChecksum, appliedBy: String,
                        on connection: Connection) async throws {
        try await connection.query("""
            INSERT INTO \(quoted) (version, name, checksum, kind, duration_ms, applied_by) VALUES ($1, $2, $3, 'baseline', 0, $4)
            """, version.text, name, checksum.text, appliedBy)
    }

    /// Starts (or keeps) the row of a non-transactional migration under way.
    func recordStarted(_ migration: Migration, appliedBy: String, on connection: Connection) async throws {
        try await connection.query("""
            INSERT INTO \(quoted) (version, name, checksum, applied_by, statements_applied, complete)
            VALUES ($1, $2, $3, $4, 0, false)
            """, migration.version.text, migration.name, migration.checksum.text, appliedBy)
    }

    func recordProgress(_ migration: Migration, statementsApplied: Int, on connection: Connection) async throws {
        try await connection.query("UPDATE \(quoted) SET statements_applied = $2 WHERE version = $1",
                                   migration.version.text, Int32(statementsApplied))
    }

    /// Marks a non-transactional migration done, with the checksum of the file that finished
    /// it (the file may have been fixed after a statement failed).
    func recordCompleted(_ migration: Migration, duration: Duration, on connection: Connection) async throws {
        try await connection.query("""
            UPDATE \(quoted) SET complete = true, duration_ms = coalesce(duration_ms, 0) + $2, applied_at = now(), checksum = $3
            WHERE version = $1
            """, migration.version.text, duration.milliseconds, migration.checksum.text)
    }

    func remove(_ version: MigrationVersion, on connection: Connection) async throws {
        try await connection.query("DELETE FROM \(quoted) WHERE version = $1", version.text)
    }

    func updateChecksum(_ version: MigrationVersion, to checksum: MigrationChecksum, on connection: Connection) async throws {
        try await connection.query("UPDATE \(quoted) SET checksum = $2 WHERE version = $1", version.text, checksum.text)
    }
}
