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
}
