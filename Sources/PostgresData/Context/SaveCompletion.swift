import PostgresClient

/// The last step of a save to the store: what the store's outcome means for the context's
/// objects and for the coordinator's row cache.
///
/// A save is one pipeline, one direction per layer: the context collects its changes
/// (`ManagedObjectContext+Save.swift`), ``SavePlan`` plans the statements (pure), the
/// coordinator executes them and returns a `SaveOutcome` (touching no cache), and this type
/// applies the outcome — the merge policy for rows that changed underneath, or the committed
/// snapshots, change sets and notifications — and tells the coordinator which cached rows
/// moved. Confined to the context's queue.
struct SaveCompletion {
    let context: ManagedObjectContext

    /// Rows that changed or vanished underneath: the cache takes them as they are now, then
    /// the merge policy resolves each object; what it leaves throws
    /// ``PostgresDataError/mergeConflict(_:)`` (the policy `error`).
    func resolve(_ conflicts: [(ManagedObjectID, RowSnapshot?)]) throws {
        context.persistentStoreCoordinator.noteCurrentRows(conflicts)
        let policy = context.mergePolicy
        var unresolved: [MergeConflict] = []
        for (id, current) in conflicts {
            guard let object = context.registered[id] else { continue }
            if policy.resolve(object, current: current, in: context) { continue }
            func named(_ values: PropertyValues?) -> [String: AttributeValue] {
                guard let values else { return [:] }
                var result: [String: AttributeValue] = [:]
                for index in object.entity.columnIndices { result[object.entity.properties[index].name] = values[index] }
                return result
            }
            unresolved.append(MergeConflict(
                objectID: id, cachedValues: named(object.snapshot?.values), objectValues: named(object.values),
                databaseValues: current.map { named($0.values) }, cachedVersion: object.snapshot?.version ?? 0,
                databaseVersion: current?.version))
        }
        if !unresolved.isEmpty { throw PostgresDataError.mergeConflict(unresolved) }
    }

    /// After the commit: permanent IDs, new snapshots, cleared change sets, the row cache,
    /// notifications. Rows the save inserted do not enter the row cache (no other context
    /// knows them yet); new objects that resolved to existing rows (`upserted`) take those
    /// rows' IDs and count as updated.
    func finish(version: UInt32, upserted: [UpsertedRow] = [], refreshed read: [(ManagedObjectID, RowSnapshot)] = []) {
        let context = self.context
        let coordinator = context.persistentStoreCoordinator
        let adopted = context.adoptUpsertedRows(upserted)
        let takesRowValues = context.mergePolicy.uniquenessResolution == .storeTrump
        // The change sets' own lists, shared: no copy of each object.
        let updated = context.updatedSet.slots
        let deleted = Array(context.deletedSet.values)
        context.rebaseRelationshipSets()
        context.makeAllocatedKeysPermanent()
        // New objects that resolved to existing rows count as updated.
        let resolved = Set(adopted.map { ObjectIdentifier($0.0) })
        var inserted: [ManagedObjectID] = []
        inserted.reserveCapacity(context.insertedSet.count)
        // One pass, each object borrowed from the set: a save of 100,000 new objects copies
        // no list of them and reads each one once.
        context.insertedSet.forEachBorrowed { object in
            object.snapshot = RowSnapshot(values: object.values, version: version)
            object.isInsertedStorage = false
            object.changedProperties.removeAll()
            if resolved.isEmpty || !resolved.contains(ObjectIdentifier(object)) { inserted.append(object.objectID) }
        }
        var retained: [(ManagedObjectID, RowSnapshot)] = []
        var refreshed: [(ManagedObjectID, RowSnapshot)] = []
        for (object, row) in adopted {
            if takesRowValues {
                object.values = row.values
                object.snapshot = row
            }
            object.holdsCacheReference = true
            retained.append((object.objectID, object.snapshot ?? row))
        }
        var updatedIDs: [ManagedObjectID] = []
        updatedIDs.reserveCapacity(context.updatedSet.count + adopted.count)
        updated.forEachBorrowed { object in
            let snapshot = RowSnapshot(values: object.values, version: version)
            object.snapshot = snapshot
            object.changedProperties.removeAll()
            if !object.holdsCacheReference {
                object.holdsCacheReference = true
                retained.append((object.objectID, snapshot))
            } else {
                refreshed.append((object.objectID, snapshot))
            }
            updatedIDs.append(object.objectID)
        }
        updatedIDs += adopted.map(\.0.objectID)
        coordinator.noteCommittedRows(retained: retained, refreshed: refreshed, deleted: deleted.map(\.objectID))
        context.applyRefreshedRows(read)
        for object in deleted {
            context.registered.remove(object.objectID)
            object.managedObjectContext = nil
            object.holdsCacheReference = false
        }
        context.insertedSet = [:]
        context.forgetReservedKeys()
        context.updatedSet = [:]
        context.deletedSet = [:]
        // Saved values are the committed ones, which an event's changes are measured from.
        if context.eventBaselines != nil { context.eventBaselines = [:] }
        context.pendingChanges.removeAll()
        var payload = ContextDidSave(
            inserted: inserted, updated: updatedIDs,
            deleted: deleted.map(\.objectID), contextName: context.name)
        payload.walPosition = context.replayFloor
        context.didSave(payload)
        coordinator.didSave(payload, from: context)
    }
}
