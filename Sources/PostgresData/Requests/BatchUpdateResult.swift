import Foundation
import PostgresClient

/// What a batch update did.
///
/// Core Data equivalent: `NSBatchUpdateResult`.
public struct BatchUpdateResult: Sendable {
    /// The result type the request asked for.
    public var resultType: BatchUpdateRequestResultType
    /// How many rows changed.
    public var count: Int
    /// The updated rows (for ``BatchUpdateRequestResultType/updatedObjectIDs`` and
    /// ``BatchUpdateRequestResultType/updatedObjects``, or when contexts were merged).
    public var objectIDs: [ManagedObjectID]
    /// The new values of the updated keys, per object (``BatchUpdateRequestResultType/updatedObjects``).
    public var updatedValues: [ManagedObjectID: [String: AttributeValue]]
}
