import PostgresClient

/// A save found an object whose row changed (or vanished) since the context read it.
///
/// Core Data equivalent: `NSMergeConflict`. It carries the three versions of the values:
/// what the context last saw (`cachedValues`), what the object holds now (`objectValues`),
/// and what the database holds (`databaseValues`, nil when the row was deleted).
public struct MergeConflict: Sendable, CustomStringConvertible {
    /// The object in conflict.
    public var objectID: ManagedObjectID
    /// The values the context read before, by key.
    public var cachedValues: [String: AttributeValue]
    /// The object's current values, by key.
    public var objectValues: [String: AttributeValue]
    /// The row's values now, by key; nil when another transaction deleted the row.
    public var databaseValues: [String: AttributeValue]?
    /// The row version the context read.
    public var cachedVersion: UInt32
    /// The row version now; nil when the row was deleted.
    public var databaseVersion: UInt32?

    public var description: String {
        guard let databaseValues else { return "\(objectID): the row was deleted by another transaction" }
        let changed = databaseValues.keys.sorted().filter { databaseValues[$0] != cachedValues[$0] }
        let detail = changed.map { key in
            "\(key): cached \(Self.show(cachedValues[key])), object \(Self.show(objectValues[key])), database \(Self.show(databaseValues[key]))"
        }
        return "\(objectID) changed in the database (version \(cachedVersion) → \(databaseVersion ?? 0))" +
            (detail.isEmpty ? "" : ": " + detail.joined(separator: "; "))
    }

    private static func show(_ value: AttributeValue?) -> String {
        guard let value, let any = value.anyValue else { return "nil" }
        return "\(any)"
    }
}
