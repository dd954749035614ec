import Foundation

/// The checksum of a migration's up section, as recorded in the history table.
///
/// Version 1: SHA-256 of the section with `\r\n` and `\r` turned into `\n`, trailing spaces
/// and tabs removed from every line, and leading and trailing blank lines removed — so
/// an editor that changes line endings or strips whitespace does not make an applied
/// migration look edited. The text reads `v1:` followed by 64 hexadecimal digits; a future
/// algorithm gets a new prefix and old rows keep being checked with theirs.
public struct MigrationChecksum: Sendable, Hashable, CustomStringConvertible {
    /// The algorithm version of this build.
    public static let currentVersion = 1

    /// `v1:<hex>`.
    public let text: String

    /// Reads a recorded checksum.
    public init(text: String) { self.text = text }

    /// The current algorithm's checksum of `sql`.
    public init(of sql: String) {
        text = "v\(Self.currentVersion):" + SHA256.hexDigest(of: Array(Self.normalized(sql).utf8))
    }

    /// The algorithm version this checksum was computed with (0 when unreadable).
    public var version: Int {
        guard text.hasPrefix("v"), let colon = text.firstIndex(of: ":") else { return 0 }
        return Int(text[text.index(after: text.startIndex)..<colon]) ?? 0
    }

    public var description: String { text }

    /// The text the checksum covers.
    static func normalized(_ sql: String) -> String {
        let unified = sql.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
        var lines = unified.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            var end = line.endIndex
            while end > line.startIndex, line[line.index(before: end)] == " " || line[line.index(before: end)] == "\t" {
                end = line.index(before: end)
            }
            return line[line.startIndex..<end]
        }
        while lines.first?.isEmpty == true { lines.removeFirst() }
        while lines.last?.isEmpty == true { lines.removeLast() }
        return lines.joined(separator: "\n")
    }
}
