/// A format string that is not a predicate: what was expected, and where (1-based column).
public struct PredicateSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong (`expected a value after '>='`).
    public var message: String
    /// The 1-based column in the format string.
    public var column: Int
    /// The format string.
    public var format: String

    public var description: String {
        let caret = String(repeating: " ", count: max(0, column - 1)) + "^"
        return "\(message) at column \(column)\n  \(format)\n  \(caret)"
    }
}
