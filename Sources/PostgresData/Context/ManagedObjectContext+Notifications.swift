import Foundation
import PostgresClient

extension ManagedObjectContext {
    /// Posted to `NotificationCenter.default` with the context as object after objects changed;
    /// `userInfo["changes"]` is a ``ContextObjectsDidChange``.
    public static let objectsDidChangeNotification = Notification.Name("PostgresDataObjectsDidChange")
    /// Posted before a save; the context is the object.
    public static let willSaveObjectsNotification = Notification.Name("PostgresDataWillSaveObjects")
    /// Posted after a save; `userInfo["changes"]` is a ``ContextDidSave``.
    public static let didSaveObjectsNotification = Notification.Name("PostgresDataDidSaveObjects")

    /// The context's notifications as an async sequence (objects-did-change, will-save,
    /// did-save), from now until the sequence is dropped.
    public func notifications() -> AsyncStream<ContextNotification> {
        notificationHub.subscribe()
    }

    /// The did-save notifications only.
    public func didSaveNotifications() -> AsyncCompactMapSequence<AsyncStream<ContextNotification>, ContextDidSave> {
        notifications().compactMap { if case .didSave(let payload) = $0 { payload } else { nil } }
    }

    /// Posts an objects-did-change notification for the changes made since the last one.
    /// Core Data equivalent: `processPendingChanges()`.
    public func processPendingChanges() {
        if !undoBaselines.isEmpty { registerUndoForEvent() }
        guard !pendingChanges.isEmpty else { return }
        let updated = pendingChanges.updatedObjects.map(\.objectID)
        if eventBaselines != nil {
            for id in Set(updated).union(pendingChanges.inserted) {
                guard let object = registered[id], !object.isFaultStorage else { continue }
                eventBaselines?[id] = object.values
            }
        }
        let changes = ContextObjectsDidChange(
            inserted: CollectedObjectIDs(collecting: pendingChanges.inserted), updated: CollectedObjectIDs(collecting: updated),
            deletedObjectIDs: pendingChanges.deleted, refreshedObjectIDs: pendingChanges.refreshed)
        pendingChanges.removeAll()
        notificationHub.post(.objectsDidChange(changes))
        for observer in notificationHub.observers() { observer.body(changes) }
        NotificationCenter.default.post(name: Self.objectsDidChangeNotification, object: self, userInfo: ["changes": changes])
    }

    func didSave(_ payload: ContextDidSave) {
        notificationHub.post(.didSave(payload))
        NotificationCenter.default.post(name: Self.didSaveObjectsNotification, object: self, userInfo: ["changes": payload])
        for child in notificationHub.children() where child.automaticallyMergesChangesFromParent {
            child.enqueueMerge(payload)
        }
    }

    func enqueueMerge(_ payload: ContextDidSave) {
        queue.async {
            self.mergeChanges(fromContextDidSave: payload)
            self.processPendingChanges()
        }
    }

    /// Merges another context's save into this one: updated objects registered here get the
    /// new committed values (keeping their own unsaved changes), deleted ones leave.
    /// Call it on this context's queue.
    ///
    /// Core Data equivalent: `mergeChanges(fromContextDidSave:)`.
    public func mergeChanges(fromContextDidSave payload: ContextDidSave) {
        assertOnQueue()
        advanceQueryGeneration()
        if let position = payload.walPosition { raiseReplayFloor(to: position) }
        let coordinator = persistentStoreCoordinator
        for id in payload.updatedObjectIDs {
            guard let object = registered[id], !object.isFaultStorage else { continue }
            if parent == nil, let snapshot = coordinator.cachedRow(for: id) {
                if snapshot.version != object.snapshot?.version {
                    rebase(object, onto: snapshot, keepLocalChanges: true)
                }
            } else if object.hasChanges {
                refresh(object, mergeChanges: true)
            } else {
                turnIntoFault(object)
            }
            object.relationshipSets = object.relationshipSets.filter { !$0.value.added.isEmpty || !$0.value.removed.isEmpty || $0.value.order != nil }
            pendingChanges.refreshed.insert(id)
        }
        // Objects inserted elsewhere are announced, not registered: a fetch or object(with:) loads them.
        pendingChanges.inserted += payload.insertedObjectIDs.filter { registered[$0] == nil }
        // To-many views of objects related to inserted or deleted ones are reloaded on demand.
        if mayHoldRelationshipSets, !payload.insertedObjectIDs.isEmpty || !payload.deletedObjectIDs.isEmpty {
            var holders: [ManagedObject] = []
            registered.forEach { object in if object.hasRelationshipSets && !object.hasChanges { holders.append(object) } }
            for object in holders { object.relationshipSets = [:] }
        }
        for id in payload.deletedObjectIDs {
            guard let object = registered[id] else { continue }
            forgetDeleted(object)
        }
    }

    /// Merges changes known only as IDs (from another process, a batch request, a
    /// notification) into `contexts`: updated objects are refreshed from the database on
    /// their next access, deleted ones leave the contexts.
    ///
    /// Core Data equivalent: `NSManagedObjectContext.mergeChanges(fromRemoteContextSave:into:)`.
    public static func mergeChanges(fromRemoteContextSave changes: [ChangeKey: Set<ManagedObjectID>],
                                    into contexts: [ManagedObjectContext]) {
        let updated = changes[.updated] ?? []
        let deleted = changes[.deleted] ?? []
        for context in contexts {
            context.persistentStoreCoordinator.removeCachedRows(updated)
            context.performAndWait {
                context.advanceQueryGeneration()
                for id in updated {
                    guard let object = context.registered[id], !object.isFaultStorage else { continue }
                    if object.hasChanges {
                        context.refresh(object, mergeChanges: true)
                    } else {
                        context.turnIntoFault(object)
                    }
                    context.pendingChanges.refreshed.insert(id)
                }
                for id in deleted {
                    guard let object = context.registered[id] else { continue }
                    context.forgetDeleted(object)
                }
                context.processPendingChanges()
            }
        }
    }
}

/// Subscribers of a context's notifications, and its child contexts.
final class NotificationHub: Sendable {
    private struct State {
        var subscribers: [UInt64: AsyncStream<ContextNotification>.Continuation] = [:]
        var next: UInt64 = 0
        var children: [ManagedObjectContextBox] = []
        var observers: [UInt64: ObjectsObserver] = [:]
    }

    private let state = Locked(State())

    func subscribe() -> AsyncStream<ContextNotification> {
        let (stream, continuation) = AsyncStream<ContextNotification>.makeStream(bufferingPolicy: .unbounded)
        let id = state.withLock { state in
            state.next += 1
            state.subscribers[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    func post(_ notification: ContextNotification) {
        for continuation in state.withLock({ Array($0.subscribers.values) }) { continuation.yield(notification) }
    }

    /// Adds a callback run on the context's queue, synchronously, after each objects-did-change.
    func observe(_ observer: ObjectsObserver) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.observers[state.next] = observer
            return state.next
        }
    }

    func removeObserver(_ id: UInt64) {
        state.withLock { _ = $0.observers.removeValue(forKey: id) }
    }

    func observers() -> [ObjectsObserver] {
        state.withLock { state in state.observers.keys.sorted().compactMap { state.observers[$0] } }
    }

    func addChild(_ context: ManagedObjectContext) {
        state.withLock { state in
            state.children.removeAll { $0.context == nil }
            state.children.append(ManagedObjectContextBox(context))
        }
    }

    func children() -> [ManagedObjectContext] {
        state.withLock { $0.children.compactMap(\.context) }
    }
}

/// A callback of objects-did-change, only ever called on its context's queue (hence
/// unchecked: what it captures stays confined to that queue).
final class ObjectsObserver: @unchecked Sendable {
    let body: (ContextObjectsDidChange) -> Void
    init(_ body: @escaping (ContextObjectsDidChange) -> Void) { self.body = body }
}

/// A context held weakly, for the lists of contexts to notify (its `weak` reference is only
/// read and written under the owner's lock).
final class ManagedObjectContextBox: @unchecked Sendable {
    weak var context: ManagedObjectContext?
    init(_ context: ManagedObjectContext) { self.context = context }
}
