import PostgresClient

/// What a batch delete returns. Core Data equivalent: `NSBatchDeleteRequestResultType`.
public enum BatchDeleteRequestResultType: Sendable, Hashable {
    /// Only whether it ran.
    case statusOnly
    /// The IDs of the deleted rows, and of the rows the delete rules deleted or changed.
    case objectIDs
    /// The number of deleted rows.
    case count
}
