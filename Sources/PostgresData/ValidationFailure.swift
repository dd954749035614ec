import PostgresClient

/// One broken rule found when validating an object before a save.
public struct ValidationFailure: Sendable, Hashable, CustomStringConvertible {
    /// The object that breaks the rule.
    public var objectID: ManagedObjectID
    /// The property, or nil for a rule of the whole object.
    public var key: String?
    /// What is wrong, in words.
    public var reason: String

    /// A failure of `objectID`'s `key` (nil: the whole object), for rules of your own
    /// (`validate<Key>`, ``ManagedObject/validateForUpdate()``) that report several at once.
    public init(objectID: ManagedObjectID, key: String?, reason: String) {
        self.objectID = objectID
        self.key = key
        self.reason = reason
    }

    public var description: String { "\(objectID)\(key.map { ".\($0)" } ?? ""): \(reason)" }
}
