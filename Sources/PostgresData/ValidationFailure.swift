import PostgresClient

/// One broken rule found when validating an object before a save.
public struct ValidationFailure: Sendable, Hashable, CustomStringConvertible {
    /// The object that breaks the rule.
    public var objectID: ManagedObjectID
    /// The property, or nil for a rule of the whole object.
    public var key: String?
    /// What is wrong, in words.
    public var reason: String

    public var description: String { "\(objectID)\(key.map { ".\($0)" } ?? ""): \(reason)" }
}
