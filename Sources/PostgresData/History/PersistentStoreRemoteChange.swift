import PostgresClient

/// History written by other coordinators (other processes, or other containers of this
/// one), as the remote-change listener read it.
///
/// Core Data equivalent: the `NSPersistentStoreRemoteChange` notification, with its history
/// token, and the transactions you would fetch after it.
public struct PersistentStoreRemoteChange: Sendable {
    /// The transactions, oldest first.
    public var transactions: [PersistentHistoryTransaction]
    /// The position after them: keep it to catch up after a restart
    /// (``PersistentStoreCoordinator/StoreOptions/remoteChangesStartToken``).
    public var token: PersistentHistoryToken

    /// Everything the transactions changed, as one did-save payload: an object inserted and
    /// deleted again appears only as deleted; one inserted and then updated, only as inserted.
    public func objectIDNotification() -> ContextDidSave {
        var payload = ContextDidSave()
        for transaction in transactions {
            let changes = transaction.objectIDNotification()
            payload.deletedObjectIDs.formUnion(changes.deletedObjectIDs)
            payload.insertedObjectIDs.subtract(changes.deletedObjectIDs)
            payload.updatedObjectIDs.subtract(changes.deletedObjectIDs)
            payload.insertedObjectIDs.formUnion(changes.insertedObjectIDs)
            payload.updatedObjectIDs.formUnion(changes.updatedObjectIDs.subtracting(payload.insertedObjectIDs))
        }
        return payload
    }
}

/// Subscribers of a coordinator's remote changes.
final class RemoteChangeHub: Sendable {
    private struct State {
        var subscribers: [UInt64: AsyncStream<PersistentStoreRemoteChange>.Continuation] = [:]
        var next: UInt64 = 0
        var finished = false
    }

    private let state = Locked(State())

    func subscribe() -> AsyncStream<PersistentStoreRemoteChange> {
        let (stream, continuation) = AsyncStream<PersistentStoreRemoteChange>.makeStream(bufferingPolicy: .unbounded)
        let id = state.withLock { state -> UInt64? in
            guard !state.finished else { return nil }
            state.next += 1
            state.subscribers[state.next] = continuation
            return state.next
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    func post(_ change: PersistentStoreRemoteChange) {
        for continuation in state.withLock({ Array($0.subscribers.values) }) { continuation.yield(change) }
    }

    func finish() {
        let continuations = state.withLock { state in
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}
