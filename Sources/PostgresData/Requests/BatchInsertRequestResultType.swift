import Foundation
import PostgresClient

/// What a batch insert returns. Core Data equivalent: `NSBatchInsertRequestResultType`.
public enum BatchInsertRequestResultType: Sendable, Hashable {
    /// Only whether it ran.
    case statusOnly
    /// The IDs of the inserted (or upserted) rows.
    case objectIDs
    /// The number of inserted (or upserted) rows.
    case count
}
