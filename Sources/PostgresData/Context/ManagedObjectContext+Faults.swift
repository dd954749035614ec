import Dispatch
import Foundation
import Logging
import OrderedCollections
import PostgresClient
import Tracing

/// Faults: filling them, their errors, and the committed values they come from.
extension ManagedObjectContext {
    /// Loads the values of a fault: from the parent context, the row cache, or the database.
    ///
    /// A property getter cannot throw, and nothing a store or another process does may stop
    /// the program: a fault whose row is gone reads as deleted, with its default values
    /// (Core Data's ``shouldDeleteInaccessibleFaults``); a store error (a lost connection is
    /// retried once on a fresh one) is recorded and thrown by the next ``save()`` or by the
    /// enclosing async ``perform(_:)``, and the object reads its default values
    /// until then. ``ManagedObject/load()`` throws both at the access instead.
    func fulfillFault(_ object: ManagedObject) {
        assertOnQueue()
        do {
            // Most faults fill from memory: the bridge, a task and a wait, only for a query.
            if try !loadWithoutQuery(object) {
                try BlockingBridge.run { try await self.load(object) }
            }
        } catch PostgresDataError.objectNotFound(let id) where shouldDeleteInaccessibleFaults {
            persistentStoreCoordinator.logger.notice("the fault \(id) has no row (deleted elsewhere): it reads as deleted")
            markInaccessible(object)
        } catch PostgresDataError.objectNotFound(let id) {
            markInaccessible(object)
            faultErrors.append(.objectNotFound(id))
        } catch let error as PostgresDataError {
            recordFaultError(error, for: object)
        } catch {
            recordFaultError(.invalidRequest("filling the fault \(object.objectID) failed: \(error)"), for: object)
        }
    }

    /// Fills a fault, throwing ``PostgresDataError/objectNotFound(_:)`` when its row is gone
    /// and the store's error when it fails twice.
    func load(_ object: ManagedObject) async throws {
        if try loadWithoutQuery(object) { return }
        let id = object.objectID
        let loaded: RowSnapshot?
        do {
            loaded = try await loadValues(for: id)
        } catch let error as PostgresDataError where error.isRetryable {
            persistentStoreCoordinator.logger.warning("filling the fault \(id) failed, retrying once: \(error)")
            loaded = try await loadValues(for: id)
        }
        guard let snapshot = loaded else { throw PostgresDataError.objectNotFound(id) }
        if object.holdsCacheReference && parent == nil && !readsOutsideRowCache {
            // Its cached row was too old (stalenessInterval) or gone: this one replaces it.
            persistentStoreCoordinator.refreshCachedRows(CollectionOfOne((id, snapshot)))
        }
        fill(object, snapshot: snapshot)
    }

    /// Fills a fault from its faulting batch or from rows in memory; false when its row must
    /// be read from the database.
    private func loadWithoutQuery(_ object: ManagedObject) throws -> Bool {
        guard object.isFaultStorage else { return true }
        if let batch = object.faultingBatch, parent == nil {
            do {
                try fill(batch)
            } catch let error as PostgresDataError where error.isRetryable {
                persistentStoreCoordinator.logger.warning("filling a batch of faults failed, retrying once: \(error)")
                try fill(batch)
            }
            if !object.isFaultStorage { return true }
        }
        if fillFromKeptRow(object) { return true }
        guard let row = rowWithoutQuery(for: object) else { return false }
        fill(object, snapshot: row)
        return true
    }

    /// Fills a fault of a large or asynchronous fetch with the row it kept, decoded during the fetch,
    /// when no newer one can exist: ``rowWithoutQuery(for:)`` then ``fill(_:snapshot:)`` for
    /// their common case, without copying the row at each step (a million faults fire after
    /// a large fetch). False leaves the fault to them.
    @inline(__always)
    private func fillFromKeptRow(_ object: ManagedObject) -> Bool {
        guard queryGeneration == nil, !object.holdsCacheReference else { return false }
        let coordinator = persistentStoreCoordinator
        let oldest = oldestAcceptableRowStamp
        // The fault's own version: the object keeps it to itself, out of the row cache.
        guard object.fillFromKeptRow(if: { coordinator.keptRowIsCurrent(generation: $0, stamp: $1, oldest: oldest) }) else { return false }
        object.awakeFromFetch()
        return true
    }

    /// A fault whose row is gone: it reads as deleted, with its entity's default values.
    func markInaccessible(_ object: ManagedObject) {
        object.values = PropertyValues(object.entity.placeholderValues)
        object.snapshot = nil
        object.isFaultStorage = false
        object.isDeletedStorage = true
        object.pendingRow = nil
        if object.holdsCacheReference {
            persistentStoreCoordinator.releaseCachedRows(CollectionOfOne(object.objectID))
            object.holdsCacheReference = false
        }
        pendingChanges.deleted.insert(object.objectID)
        inaccessibleIDs.insert(object.objectID)
    }

    /// An error met while reading a value, which cannot throw: it waits for the next save or
    /// the end of the async block, as a fault's error does.
    func recordFaultError(_ error: PostgresDataError) {
        persistentStoreCoordinator.logger.error("\(error)")
        faultErrors.append(error)
    }

    /// A fault the store failed to fill: the error waits for the next save or the end of the
    /// async block; the object reads its default values and becomes a fault again then.
    private func recordFaultError(_ error: PostgresDataError, for object: ManagedObject) {
        persistentStoreCoordinator.logger.error("filling the fault \(object.objectID) failed: \(error)")
        faultErrors.append(error)
        object.values = PropertyValues(object.entity.placeholderValues)
        object.isFaultStorage = false
        unfilledFaults.append(object)
    }

    /// Throws the first error of a fault filled since the last call, turning the faults that
    /// failed back into faults (the next access tries again).
    func throwFaultErrors() throws {
        guard let error = faultErrors.first else { return }
        faultErrors = []
        for object in unfilledFaults where object.snapshot == nil && !object.hasChanges {
            object.isFaultStorage = true
            object.values = []
        }
        unfilledFaults = []
        throw error
    }

    /// The first fault error, taken as ``throwFaultErrors()`` takes it; nil when none.
    func faultErrorToThrow() -> (any Error)? {
        do { try throwFaultErrors() } catch { return error }
        return nil
    }

    /// Throws the first error recorded since the last call: a fault's, else a setter's.
    func throwRecordedErrors() throws {
        try throwFaultErrors()
        guard let error = recordedErrors.first else { return }
        recordedErrors = []
        throw error
    }

    /// The row a fault a fetch returned fills with, without a query: the one it kept (a fault
    /// of a large or asynchronous fetch) unless the coordinator saw a newer one, or the row cache's;
    /// nil when the row changed without its values being known, or was never fetched.
    func rowWithoutQuery(for fault: ManagedObject) -> RowSnapshot? {
        let coordinator = persistentStoreCoordinator
        // A pinned context reads its snapshot's rows only.
        if queryGeneration != nil { return fault.holdsCacheReference ? nil : fault.pendingRow?.decodedIfPossible }
        let oldest = oldestAcceptableRowStamp
        if !fault.holdsCacheReference, let pending = fault.pendingRow {
            switch coordinator.cachedRow(for: fault.objectID, pending: pending, oldest: oldest) {
            case .own: return pending.decodedIfPossible
            case .newer(let snapshot): return snapshot
            case .changed: return nil
            }
        }
        return fault.holdsCacheReference ? coordinator.cachedRow(for: fault.objectID, oldest: oldest) : nil
    }

    /// The rows that fill `faults` without a query, in one lock per kind: as
    /// ``rowWithoutQuery(for:)``, except that any context's cached row serves a fault that
    /// kept none; nil where the database must be asked.
    func rowsWithoutQuery(for faults: [ManagedObject]) -> [RowSnapshot?] {
        if queryGeneration != nil { return faults.map { $0.holdsCacheReference ? nil : $0.pendingRow?.decodedIfPossible } }
        let coordinator = persistentStoreCoordinator
        let oldest = oldestAcceptableRowStamp
        var rows = coordinator.cachedRows(for: faults.map(\.objectID), oldest: oldest)
        let pending = faults.indices.compactMap { index -> (Int, ManagedObjectID, RowSnapshot)? in
            guard !faults[index].holdsCacheReference, let row = faults[index].pendingRow else { return nil }
            return (index, faults[index].objectID, row)
        }
        guard !pending.isEmpty else { return rows }
        for ((index, _, own), found) in zip(pending, coordinator.cachedRows(forFaults: pending.map { ($0.1, $0.2) }, oldest: oldest)) {
            switch found {
            case .own: rows[index] = own.decodedIfPossible
            case .newer(let snapshot): rows[index] = snapshot
            case .changed: rows[index] = nil
            }
        }
        return rows
    }

    /// Gives a fault the values of `row` (decoded, if it was kept encoded); the decoded row
    /// enters the row cache, unless it is the version of the row the fault kept (a fault of
    /// a large or asynchronous fetch): the object keeps it to itself, as the fault did, and a million
    /// fired faults cost no million cache entries.
    func fill(_ object: ManagedObject, snapshot row: RowSnapshot) {
        let keptOwnRow = object.pendingRow.map { $0.isKept && $0.version == row.version } ?? false
        let snapshot = row.decoded()
        object.fill(with: snapshot)
        if parent == nil && !object.holdsCacheReference && !readsOutsideRowCache && !keptOwnRow {
            persistentStoreCoordinator.retainCachedRows(CollectionOfOne((object.objectID, snapshot)))
            object.holdsCacheReference = true
        }
        object.awakeFromFetch()
    }

    /// The committed state of an object, decoded: the parent's view for a child context,
    /// else the row cache's, else the database's (nil when there is no row).
    func loadValues(for id: ManagedObjectID, preferCache: Bool = true) async throws -> RowSnapshot? {
        if let parent {
            return try parent.performAndWait { () throws -> RowSnapshot? in
                guard let object = try? parent.existingObject(with: id) else { return nil }
                return RowSnapshot(values: object.values, version: object.snapshot?.version ?? 0)
            }
        }
        guard let key = id.primaryKey else { return nil }
        let coordinator = persistentStoreCoordinator
        if preferCache, queryGeneration == nil, let snapshot = coordinator.cachedRow(for: id, oldest: oldestAcceptableRowStamp) {
            return snapshot.decoded()
        }
        let entity = id.entity
        let rows = try await store { access in try await coordinator.fetchSnapshots(entity, keys: [key], access: access) }
        return rows.first?.1
    }
}
