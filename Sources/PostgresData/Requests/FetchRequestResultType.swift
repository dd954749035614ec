import PostgresClient

/// What kind of results a fetch returns. Core Data equivalent: `NSFetchRequestResultType`.
public enum FetchRequestResultType: Sendable, Hashable {
    /// Managed objects registered in the context.
    case managedObject
    /// Object IDs only (`Sendable`: hand them to other contexts).
    case managedObjectID
    /// One ``FetchedDictionary`` (or `[String: AttributeValue]`) per row or group, holding
    /// ``FetchRequest/propertiesToFetch``.
    case dictionary
    /// The number of matching rows.
    case count
}
