import PostgresClient

/// What a batch delete did.
///
/// Core Data equivalent: `NSBatchDeleteResult`.
public struct BatchDeleteResult: Sendable {
    /// The result type the request asked for.
    public var resultType: BatchDeleteRequestResultType
    /// How many rows of the entity were deleted.
    public var count: Int
    /// The deleted rows of the entity (``BatchDeleteRequestResultType/objectIDs``).
    public var objectIDs: [ManagedObjectID]
    /// Rows of other entities deleted by `cascade` rules.
    public var cascadedObjectIDs: [ManagedObjectID]
    /// Rows of other entities whose reference a `nullify` rule cleared.
    public var nullifiedObjectIDs: [ManagedObjectID]
}

extension BatchDeleteResult {
    /// The result of deleting nothing.
    init(nothingFor request: BatchDeleteRequest) {
        self.init(resultType: request.resultType, count: 0, objectIDs: [], cascadedObjectIDs: [], nullifiedObjectIDs: [])
    }
}
