import Foundation

/// One row of the history table: a migration that was applied (or is being applied,
/// outside a transaction), or the baseline.
public struct AppliedMigration: Sendable, Hashable, Codable {
    /// Whether the row records a migration that ran or a baseline.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// A migration file that ran.
        case migration
        /// `baseline V`: versions up to V count as applied without having run.
        case baseline
    }

    /// The version as the file name wrote it.
    public var version: MigrationVersion
    /// The file name's description.
    public var name: String
    /// The up section's checksum when it was applied.
    public var checksum: MigrationChecksum
    /// Migration or baseline.
    public var kind: Kind
    /// When it finished (or, while under way, when it started).
    public var appliedAt: Date
    /// How long it took; nil while a non-transactional migration is under way.
    public var duration: Duration?
    /// Who applied it: database user, host, process.
    public var appliedBy: String
    /// For a non-transactional migration, the statements done so far.
    public var statementsApplied: Int?
    /// False while a non-transactional migration is under way (or after it stopped midway).
    public var isComplete: Bool
}

extension AppliedMigration {
    private enum CodingKeys: String, CodingKey {
        case version, name, checksum, kind, appliedAt, durationMilliseconds, appliedBy, statementsApplied, isComplete
    }

    /// In JSON the duration is `durationMilliseconds`, a number (a `Duration` would encode
    /// as a pair of seconds and attoseconds).
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(name, forKey: .name)
        try container.encode(checksum, forKey: .checksum)
        try container.encode(kind, forKey: .kind)
        try container.encode(appliedAt, forKey: .appliedAt)
        try container.encodeIfPresent(duration?.milliseconds, forKey: .durationMilliseconds)
        try container.encode(appliedBy, forKey: .appliedBy)
        try container.encodeIfPresent(statementsApplied, forKey: .statementsApplied)
        try container.encode(isComplete, forKey: .isComplete)
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(MigrationVersion.self, forKey: .version)
        name = try container.decode(String.self, forKey: .name)
        checksum = try container.decode(MigrationChecksum.self, forKey: .checksum)
        kind = try container.decode(Kind.self, forKey: .kind)
        appliedAt = try container.decode(Date.self, forKey: .appliedAt)
        duration = try container.decodeIfPresent(Int64.self, forKey: .durationMilliseconds).map { .milliseconds($0) }
        appliedBy = try container.decode(String.self, forKey: .appliedBy)
        statementsApplied = try container.decodeIfPresent(Int.self, forKey: .statementsApplied)
        isComplete = try container.decode(Bool.self, forKey: .isComplete)
    }
}

extension MigrationVersion: Codable {
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let version = MigrationVersion(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a version: \(text)"))
        }
        self = version
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}

extension MigrationChecksum: Codable {
    public init(from decoder: Decoder) throws {
        self.init(text: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
