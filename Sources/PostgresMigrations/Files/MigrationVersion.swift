/// The version of a migration: the digits its file name starts with (`0007`, or a
/// timestamp such as `20261121093000`), ordered as numbers.
public struct MigrationVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The digits as written in the file name.
    public let text: String

    /// A version from its digits; nil when `text` is empty or not all digits.
    public init?(_ text: String) {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        self.text = text
    }

    /// The digits without leading zeros, so that `0007` and `7` are the same version.
    private var significant: Substring {
        let trimmed = text.drop { $0 == "0" }
        return trimmed.isEmpty ? "0" : trimmed
    }

    public static func == (lhs: MigrationVersion, rhs: MigrationVersion) -> Bool { lhs.significant == rhs.significant }
    public func hash(into hasher: inout Hasher) { hasher.combine(significant) }

    public static func < (lhs: MigrationVersion, rhs: MigrationVersion) -> Bool {
        let left = lhs.significant, right = rhs.significant
        return left.count != right.count ? left.count < right.count : left < right
    }

    public var description: String { text }
}
