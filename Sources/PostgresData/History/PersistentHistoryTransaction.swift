import Foundation

/// One save or batch request recorded in the store's persistent history.
///
/// Core Data equivalent: `NSPersistentHistoryTransaction`.
public struct PersistentHistoryTransaction: Sendable, Hashable {
    /// The position just after this transaction: fetching history after it returns the
    /// transactions that follow.
    public var token: PersistentHistoryToken
    /// The ``ManagedObjectContext/transactionAuthor`` of the context that saved, if any.
    public var author: String?
    /// The ``ManagedObjectContext/name`` of the context that saved, if any.
    public var contextName: String?
    /// When the transaction wrote its history (the server's clock).
    public var timestamp: Date
    /// What the transaction changed, one entry per object; empty when the request asked for
    /// transactions only.
    public var changes: [PersistentHistoryChange]
    /// The history row's number, increasing in the order transactions wrote history.
    public var transactionNumber: Int64
    /// The PostgreSQL transaction ID (`xid8`) that committed it.
    public var transactionID: UInt64
    /// The coordinator that wrote it (``PersistentStoreCoordinator/instanceID``).
    public var storeInstanceID: UUID

    /// The transaction's changes as a did-save payload, to merge into a context with
    /// ``ManagedObjectContext/mergeChanges(fromContextDidSave:)``.
    ///
    /// Core Data equivalent: `objectIDNotification()`.
    public func objectIDNotification() -> ContextDidSave {
        var payload = ContextDidSave(contextName: contextName)
        for change in changes {
            switch change.changeType {
            case .insert: payload.insertedObjectIDs.insert(change.changedObjectID)
            case .update: payload.updatedObjectIDs.insert(change.changedObjectID)
            case .delete: payload.deletedObjectIDs.insert(change.changedObjectID)
            }
        }
        return payload
    }
}
