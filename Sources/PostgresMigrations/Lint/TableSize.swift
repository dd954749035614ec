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
