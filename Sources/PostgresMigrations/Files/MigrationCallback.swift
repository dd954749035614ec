/// SQL the runner executes around migrations, as Flyway's SQL callbacks: a file of the
/// migrations folder named after its event (`beforeMigrate.sql`, or
/// `afterEachMigrate__refresh_grants.sql` with a description), its whole text the SQL.
/// Callbacks are not recorded in the history; several for one event run in name order.
public struct MigrationCallback: Sendable {
    /// When a callback runs.
    public enum Event: String, Sendable, CaseIterable, Codable {
        /// Once per `up`, after the migration lock is taken and before the first migration
        /// (also when nothing is pending), in a transaction of its own.
        case beforeMigrate
        /// Before each migration, in its transaction (before its first statement outside one).
        case beforeEachMigrate
        /// After each migration, in its transaction (after its last statement outside one).
        case afterEachMigrate
        /// Once per `up` that succeeded, after the last migration, in a transaction of its own.
        case afterMigrate
    }

    /// The event.
    public let event: Event
    /// The file name.
    public let fileName: String
    /// The SQL.
    public let script: MigrationScript

    /// The callback a file name denotes, or nil when the name is not a callback's.
    init?(fileName: String, contents: String) {
        guard fileName.hasSuffix(".sql") else { return nil }
        let stem = fileName.dropLast(4)
        let eventName = stem.range(of: "__").map { stem[..<$0.lowerBound] } ?? stem
        guard let event = Event(rawValue: String(eventName)) else { return nil }
        self.event = event
        self.fileName = fileName
        script = MigrationScript(sql: contents.replacingOccurrences(of: "\r\n", with: "\n"), firstLine: 1)
    }
}
