/// A dangerous operation found in a migration by ``MigrationLinter``.
public struct LintFinding: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How bad a finding is; errors make `lint` exit with 3.
    public enum Severity: String, Sendable, Hashable, Codable {
        /// Will fail, or will block reads and writes for a long time on a big table.
        case error
        /// Risky depending on table size or on what running code does.
        case warning
    }

    /// The rule's identifier (`index-without-concurrently`); `-- lint:ignore <rule>` in the
    /// comments right before a statement silences it for that statement.
    public var rule: String
    /// Error or warning.
    public var severity: Severity
    /// The migration file.
    public var file: String
    /// The line of the statement in the file.
    public var line: Int
    /// What the statement does and why it is dangerous.
    public var message: String
    /// The safe way to do it.
    public var hint: String
    /// The table concerned, when there is one.
    public var table: String?
    /// The table's size on the database given, in bytes, when known.
    public var tableBytes: Int64?

    public var description: String {
        "\(file):\(line): \(severity.rawValue) [\(rule)] \(message)\n  hint: \(hint)"
    }
}

/// What the linter knows about a table from the live database.
public struct TableSize: Sendable, Hashable {
    /// `pg_total_relation_size`: the table with its indexes and TOAST.
    public var bytes: Int64
    /// The planner's row estimate (`pg_class.reltuples`).
    public var estimatedRows: Int64

    /// A size as read from the catalog.
    public init(bytes: Int64, estimatedRows: Int64) {
        self.bytes = bytes
        self.estimatedRows = estimatedRows
    }

    var description: String {
        "\(Self.format(bytes: bytes)), about \(Self.format(rows: estimatedRows)) rows"
    }

    static func format(bytes: Int64) -> String {
        let units = ["bytes", "kB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) bytes" : (value < 10 ? String(format: "%.1f %@", value, units[unit]) : "\(Int(value.rounded())) \(units[unit])")
    }

    static func format(rows: Int64) -> String {
        rows >= 1_000_000 ? String(format: "%.1fM", Double(rows) / 1_000_000) : rows >= 1000 ? "\(rows / 1000)k" : "\(max(rows, 0))"
    }
}
