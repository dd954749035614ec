import Foundation
import PostgresClient

/// What a batch update returns. Core Data equivalent: `NSBatchUpdateRequestResultType`,
/// plus ``updatedObjects``.
public enum BatchUpdateRequestResultType: Sendable, Hashable {
    /// Only whether it ran.
    case statusOnly
    /// The IDs of the updated rows.
    case updatedObjectIDs
    /// The number of updated rows.
    case updatedObjectsCount
    /// The IDs and the new values of the updated keys, so caches refresh without a query.
    case updatedObjects
}
