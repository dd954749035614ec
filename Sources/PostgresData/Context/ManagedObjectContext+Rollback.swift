import Dispatch
import Foundation
import Logging
import OrderedCollections
import PostgresClient
import Tracing

/// Discarding changes: rollback, reset, refresh, and the object states they restore.
extension ManagedObjectContext {
    /// Discards every unsaved change: inserted objects leave, deleted ones come back, updated
    /// ones return to their committed values.
    ///
    /// Core Data equivalent: `rollback()`.
    public func rollback() {
        assertOnQueue()
        for object in insertedSet.values {
            registered.remove(object.objectID)
            object.managedObjectContext = nil
            object.isInsertedStorage = false
            object.isDeletedStorage = true
        }
        for object in Array(updatedSet.values) + Array(deletedSet.values) {
            object.isDeletedStorage = false
            revertToSnapshot(object)
        }
        registered.forEach { object in
            if !object.relationshipSets.isEmpty { object.relationshipSets = [:] }
        }
        forgetChanges()
        undoManagerStorage?.removeAllActions()
    }

    /// Forgets every registered object and unsaved change; objects held elsewhere become
    /// unusable. Core Data equivalent: `reset()`.
    public func reset() {
        assertOnQueue()
        unregisterAll()
        mayHoldRelationshipSets = false
        forgetChanges()
        undoManagerStorage?.removeAllActions()
        advanceQueryGeneration()
        filledBatches = []
        fetchedPropertyValues = [:]
        if eventBaselines != nil { eventBaselines = [:] }
    }

    /// Empties the unsaved changes, the recorded errors and the pending notifications.
    private func forgetChanges() {
        forgetReservedKeys()
        deletesToPropagate = []
        undoBaselines = [:]
        insertedSet = [:]
        updatedSet = [:]
        deletedSet = [:]
        recordedErrors = []
        unfilledFaults = []
        faultErrors = []
        inaccessibleIDs = []
        pendingChanges.removeAll()
    }

    /// Updates an object from the store: without `mergeChanges` its unsaved changes are
    /// discarded and it becomes a fault; with it, the newest committed values are loaded and
    /// the unsaved changes applied on top.
    ///
    /// Core Data equivalent: `refresh(_:mergeChanges:)`.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        assertOnQueue()
        guard object.managedObjectContext === self, !object.isInsertedStorage else { return }
        fetchedPropertyValues[object.objectID] = nil
        if !mergeChanges || !object.hasChanges {
            updatedSet[ObjectIdentifier(object)] = nil
            turnIntoFault(object)
            return
        }
        let id = object.objectID
        if let snapshot = try? BlockingBridge.run({ try await self.loadValues(for: id, preferCache: false) }) {
            rebase(object, onto: snapshot, keepLocalChanges: true)
        }
    }

    /// Refreshes every registered object: unchanged ones become faults (their next access
    /// reads the newest committed values); changed ones take the newest committed values
    /// under their unsaved changes, read in one query per entity. Fetched properties are
    /// loaded again on their next read.
    ///
    /// Core Data equivalent: `refreshAllObjects()`.
    public func refreshAllObjects() {
        assertOnQueue()
        advanceQueryGeneration()
        fetchedPropertyValues = [:]
        var changed: [ManagedObject] = []
        for object in registered.objects where !object.isInsertedStorage && !object.isFaultStorage {
            if object.hasChanges { changed.append(object) } else { turnIntoFault(object) }
        }
        let coordinator = persistentStoreCoordinator
        for (entity, objects) in SavePlan.grouped(changed.filter { !$0.isDeletedStorage }, by: \.entity) {
            let keys = objects.compactMap(\.objectID.primaryKey)
            do {
                let rows = try blockingStore { access in try await coordinator.fetchSnapshots(entity, keys: keys, access: access) }
                let byKey = Dictionary(rows, uniquingKeysWith: { first, _ in first })
                for object in objects {
                    guard let key = object.objectID.primaryKey, let row = byKey[key] else { continue }
                    rebase(object, onto: row, keepLocalChanges: true)
                }
            } catch {
                // As for a fault: the error ends the enclosing block (or the next save).
                faultErrors.append(error as? PostgresDataError ?? .invalidRequest("\(error)"))
            }
        }
    }

    func turnIntoFault(_ object: ManagedObject) {
        object.willTurnIntoFault()
        defer { object.didTurnIntoFault() }
        object.values = []
        object.snapshot = nil
        object.missingProperties = nil
        object.changedProperties.removeAll()
        object.relationshipSets = [:]
        object.isFaultStorage = true
        if object.holdsCacheReference {
            persistentStoreCoordinator.releaseCachedRows(CollectionOfOne(object.objectID))
            object.holdsCacheReference = false
        }
    }

    func revertToSnapshot(_ object: ManagedObject) {
        if let snapshot = object.snapshot {
            object.fill(with: snapshot)
        }
        object.changedProperties.removeAll()
        object.relationshipSets = [:]
        object.awake(fromSnapshotEvents: .rollback)
    }

    /// Puts an object on a newer committed state, keeping its local changes when asked.
    func rebase(_ object: ManagedObject, onto newer: RowSnapshot, keepLocalChanges: Bool) {
        let snapshot = newer.decoded()
        let local = keepLocalChanges ? object.changedProperties : PropertySet()
        var merged = snapshot.values
        for index in local where index < object.values.count { merged[index] = object.values[index] }
        object.values = merged
        object.snapshot = snapshot
        object.missingProperties = nil
        object.changedProperties.removeAll()
        for index in local where merged[index] != snapshot.values[index] { object.changedProperties.insert(index) }
        object.isFaultStorage = false
        didChange(object)
        object.awake(fromSnapshotEvents: .refresh)
    }
}
