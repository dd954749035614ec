/// What happened to one object in one history transaction.
///
/// Core Data equivalent: `NSPersistentHistoryChange`.
public struct PersistentHistoryChange: Sendable, Hashable {
    /// The kind of change.
    ///
    /// Core Data equivalent: `NSPersistentHistoryChangeType`.
    public enum ChangeType: Int16, Sendable, Hashable, CaseIterable {
        /// The object was inserted.
        case insert = 0
        /// Some of its properties were updated.
        case update = 1
        /// The object was deleted.
        case delete = 2
    }

    /// The kind of change.
    public var changeType: ChangeType
    /// The object changed.
    public var changedObjectID: ManagedObjectID
    /// For an update, the names of the properties that changed (relationships included);
    /// nil for inserts and deletes, and for batch updates' rows when unknown.
    public var updatedProperties: Set<String>?
    /// For a deletion: the object's values of the attributes that keep theirs in history
    /// (``AttributeDescription/preservesValueInHistoryOnDeletion``), by name; nil otherwise.
    ///
    /// Core Data equivalent: `tombstone`.
    public var tombstone: [String: AttributeValue]?

    /// A change.
    public init(changeType: ChangeType, changedObjectID: ManagedObjectID, updatedProperties: Set<String>? = nil,
                tombstone: [String: AttributeValue]? = nil) {
        self.changeType = changeType
        self.changedObjectID = changedObjectID
        self.updatedProperties = updatedProperties
        self.tombstone = tombstone
    }
}
