/// What a batch insert did.
///
/// Core Data equivalent: `NSBatchInsertResult`.
public struct BatchInsertResult: Sendable {
    /// The result type the request asked for.
    public var resultType: BatchInsertRequestResultType
    /// How many rows were inserted (or, in an upsert, inserted or updated).
    public var count: Int
    /// Their IDs (``BatchInsertRequestResultType/objectIDs``, or when contexts were merged).
    public var objectIDs: [ManagedObjectID]
    /// Of `objectIDs`, the rows an upsert updated rather than inserted (merged as updates).
    var updatedObjectIDs: [ManagedObjectID] = []
    /// Inserted and updated objects, to merge.
    var changes: [ChangeKey: Set<ManagedObjectID>] {
        let updated = Set(updatedObjectIDs)
        return [.inserted: Set(objectIDs).subtracting(updated), .updated: updated]
    }
}
