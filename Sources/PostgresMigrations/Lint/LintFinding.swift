/// A dangerous operation found in a migration by ``MigrationLinter``.
public struct LintFinding: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How bad a finding is; errors make `lint` exit with 3.
    public enum Severity: String, Sendable, Hashable, Codable {
        /// Will fail, or will block reads and writes for a long time on a big table.
        case error
        /// Risky depending on table size or on what running code does.
        case warning
    }

    /// The rule's identifier (`index-without-concurrently`, see ``LintRule``);
    /// `-- lint:ignore <rule>` in the comments right before a statement silences it for
    /// that statement.
    public var rule: String
    /// Error or warning.
    public var severity: Severity
    /// The migration file.
    public var file: String
    /// The line of the statement in the file.
    public var line: Int
    /// What the statement does and why it is dangerous: table, column, lock and effect.
    public var message: String
    /// The safe way to do it.
    public var hint: String
    /// The table concerned, when there is one (schema-qualified when the statement qualifies it).
    public var table: String?
    /// The table's size on the database given, in bytes, when known.
    public var tableBytes: Int64?
    /// The lock the statement takes, when that is the hazard (`ACCESS EXCLUSIVE`).
    public var lock: String?
    /// The statement, as written in the file (for a code frame).
    public var statement: String?
    /// The rule's documentation page in the DocC archive.
    public var documentation: String?

    public var description: String {
        "\(file):\(line): \(severity.rawValue) [\(rule)] \(message)\n  hint: \(hint)"
    }
}
