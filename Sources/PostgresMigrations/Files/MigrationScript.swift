import Foundation

/// The SQL of one section of a migration file.
public struct MigrationScript: Sendable {
    /// The section's text.
    public let sql: String
    /// The line of the file where the section's text starts.
    public let firstLine: Int

    /// The section's statements, each with its line in the file.
    public func statements(file: String) throws(MigrationError) -> [SQLStatement] {
        do {
            return try SQLStatement.split(sql, firstLine: firstLine)
        } catch {
            throw .invalidFile(file: file, line: error.line, message: error.message)
        }
    }
}
