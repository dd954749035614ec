import PostgresClient

/// A session that holds a lock another one waits for, as `pg_stat_activity` shows it.
public struct LockBlocker: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The blocking backend's process ID (`pg_cancel_backend(pid)` ends its statement).
    public var pid: Int32
    /// Its database user.
    public var user: String?
    /// Its `application_name`.
    public var applicationName: String?
    /// `active`, `idle in transaction`, …
    public var state: String?
    /// Its current or last statement.
    public var query: String?
    /// How long its transaction (or, outside one, its session) has been open, in seconds.
    public var ageSeconds: Double?

    public var description: String {
        var text = "pid \(pid)"
        if let user { text += " (\(user)\(applicationName.map { $0.isEmpty ? "" : ", \($0)" } ?? ""))" }
        if let state { text += ", \(state)" }
        if let ageSeconds { text += " for \(Self.format(ageSeconds))" }
        if let query, !query.isEmpty { text += ": \(MigrationError.excerpt(query))" }
        return text
    }

    static func format(_ seconds: Double) -> String {
        seconds < 1 ? "\(Int(seconds * 1000)) ms" : seconds < 120 ? String(format: "%.1f s", seconds) : "\(Int(seconds / 60)) min"
    }

    /// The sessions blocking the backend `pid` (`pg_blocking_pids`).
    static func blocking(_ pid: Int32, on connection: Connection) async throws -> [LockBlocker] {
        try await read("""
            SELECT a.pid, a.usename::text, a.application_name, a.state, a.query,
                   extract(epoch FROM now() - coalesce(a.xact_start, a.backend_start))::float8
            FROM pg_stat_activity a WHERE a.pid = ANY (pg_blocking_pids($1)) ORDER BY a.pid
            """, pid, on: connection)
    }

    /// The session holding the advisory lock `key`, if any.
    static func holding(advisoryKey key: String, on connection: Connection) async throws -> LockBlocker? {
        try await read("""
            SELECT a.pid, a.usename::text, a.application_name, a.state, a.query,
                   extract(epoch FROM now() - a.backend_start)::float8
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted
              AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended($1, 0)
            LIMIT 1
            """, key, on: connection).first
    }

    private static func read<Value: PostgresEncodable>(_ sql: String, _ value: Value, on connection: Connection) async throws -> [LockBlocker] {
        try await connection.query(sql, value).map { row in
            let (pid, user, application, state, query, age) = try row.decode((Int32, String?, String?, String?, String?, Double?).self)
            return LockBlocker(pid: pid, user: user, applicationName: application, state: state, query: query, ageSeconds: age)
        }
    }
}
