/// Where one migration stands: what `status` prints, one line per version.
public struct MigrationStatus: Sendable, Hashable, Codable {
    /// The states a version can be in.
    public enum State: String, Sendable, Hashable, Codable {
        /// Applied, and the file still has the checksum it was applied with.
        case applied
        /// Not applied yet; `up` will run it.
        case pending
        /// Not applied, but its version is lower than one already applied: `up` refuses it
        /// unless out-of-order runs are allowed.
        case outOfOrder = "out-of-order"
        /// Applied, but the file changed since.
        case edited
        /// A non-transactional migration that started and did not finish; `up` resumes it
        /// after its last statement that succeeded, with the file as it is now (fixed, say).
        case partial
        /// Applied, but no file has its version any more.
        case missing
        /// Covered by a baseline: counts as applied without having run.
        case baseline
    }

    /// The version.
    public var version: MigrationVersion
    /// The description from the file name (or the history row).
    public var name: String
    /// Where it stands.
    public var state: State
    /// The file, when there is one.
    public var fileName: String?
    /// The history row, when there is one.
    public var applied: AppliedMigration?
    /// The file's checksum, when there is a file.
    public var checksum: MigrationChecksum?
}
