import Dispatch
import Foundation
import Logging
import OrderedCollections
import PostgresClient
import Tracing

/// Inserting and deleting objects, and the changes pending a save.
extension ManagedObjectContext {
    /// Registers a new object as inserted; its row is written by the next save.
    ///
    /// Core Data equivalent: `insert(_:)`. ``ManagedObject/init(context:)`` calls it.
    public func insert(_ object: ManagedObject) {
        assertOnQueue()
        willChangeForUndo(object)
        let key = ObjectIdentifier(object)
        if object.isDeletedStorage, deletedSet[key] != nil {
            deletedSet[key] = nil
            object.isDeletedStorage = false
            return
        }
        // A new object takes a fresh temporary ID, which no registered object has: it is then
        // registered and listed as inserted without a probe of either table.
        var isNew = false
        let model = persistentStoreCoordinator.managedObjectModel
        if !model.owns(object.entity), object.objectID.primaryKey == nil,
           let own = model.entitiesByName[object.entity.name], own.managedObjectClass == object.entity.managedObjectClass {
            // Made with the description of another model (`Item.entity()` when the class is in
            // two models): it becomes an object of this context's model.
            object.objectID = .temporary(for: own)
            isNew = true
        } else if object.objectID.isUnassigned {
            object.objectID = .temporary(for: object.entity)
            isNew = true
        }
        if isNew {
            if object.values.isEmpty { object.values = PropertyValues(object.entity.placeholderValues) }
            object.isFaultStorage = false
            return enterNew(object, of: object.entity)
        }
        // One probe: registered here unless an object with its ID is.
        guard registered.insert(object).inserted else { return }
        if object.values.isEmpty { object.values = PropertyValues(object.entity.placeholderValues) }
        object.isFaultStorage = false
        object.join(self)
        object.isInsertedStorage = true
        insertedSet[key] = object
        pendingChanges.inserted.append(object.objectID)
        hookChanges?.append(object)
        object.awakeFromInsert()
    }

    /// ``insert(_:)`` for an object its initialiser has just made with `entity` (an unassigned
    /// ID, the entity's default values, in no context), with what the general path checks
    /// skipped and the entity passed in rather than read from the object each time.
    func insertNewlyMade(_ object: ManagedObject, of entity: EntityDescription) {
        guard entity.owner == modelNumber else { return insert(object) }
        assertOnQueue()
        willChangeForUndo(object)
        object.objectID = .temporary(for: entity)
        enterNew(object, of: entity)
    }

    /// Registers and lists as inserted an object that has just taken a fresh temporary ID of
    /// `entity`, which no registered object has: no probe of either table.
    private func enterNew(_ object: ManagedObject, of entity: EntityDescription) {
        registered.insertNew(object)
        object.join(self)
        object.isInsertedStorage = true
        insertedSet.appendNew(object)
        if parent == nil, !isReadOnly, keyDemand.note(entity) { (keyReservation ?? makeKeyReservation()).reserve(&keyDemand) }
        pendingChanges.inserted.append(object.objectID)
        hookChanges?.append(object)
        object.awakeFromInsert()
    }

    /// Forgets the keys reserved and the objects waiting for them (a save gave its objects
    /// keys; a rollback or a reset dropped them).
    func forgetReservedKeys() {
        keyReservation?.clear()
        keyDemand = KeyReservation.Demand()
    }

    private func makeKeyReservation() -> KeyReservation {
        let reservation = KeyReservation(coordinator: persistentStoreCoordinator)
        keyReservation = reservation
        return reservation
    }

    /// Marks an object deleted and applies the delete rules of its relationships (nullify
    /// inverses, cascade); `deny` is checked when saving. The row goes at the next save.
    ///
    /// Core Data equivalent: `delete(_:)`.
    public func delete(_ object: ManagedObject) {
        assertOnQueue()
        guard object.managedObjectContext === self, !object.isDeletedStorage else { return }
        let key = ObjectIdentifier(object)
        object.willAccessValues()
        willChangeForUndo(object)
        object.prepareForDeletion()
        hookChanges?.append(object)
        object.isDeletedStorage = true
        updatedSet[key] = nil
        if insertedSet.removeValue(forKey: key) != nil {
            applyDeleteRules(of: object)
            registered.remove(object.objectID)
            object.managedObjectContext = nil
            return
        }
        deletedSet[key] = object
        pendingChanges.deleted.insert(object.objectID)
        if propagatesDeletesAtEndOfEvent { applyDeleteRules(of: object) } else { deletesToPropagate.append(object) }
    }

    /// Applies the delete rules that waited for the save; a rule may delete more objects,
    /// whose rules apply in turn.
    func propagateDeferredDeletes() {
        while !deletesToPropagate.isEmpty {
            let objects = deletesToPropagate
            deletesToPropagate = []
            for object in objects where object.isDeletedStorage { applyDeleteRules(of: object) }
        }
    }

    /// Called by objects whose values changed.
    func didChange(_ object: ManagedObject) {
        hookChanges?.append(object)
        let key = ObjectIdentifier(object)
        guard !object.isInsertedStorage, !object.isDeletedStorage else { return }
        if object.isUpdated {
            updatedSet[key] = object
            pendingChanges.noteUpdated(object)
        } else {
            updatedSet[key] = nil
        }
    }

    /// The objects a save writes: inserted, then updated, then deleted.
    func changedObjectsInSaveOrder() -> ChangedObjects {
        ChangedObjects(of: self)
    }

    /// The members of the inserted, updated and deleted sets, as ``ObjectSet/membership``
    /// tells them: equal values, the same objects in the same order.
    var changeSetMembership: [ObjectSet.Membership] { [insertedSet.membership, updatedSet.membership, deletedSet.membership] }

    /// True when the context has unsaved inserts, updates or deletes.
    public var hasChanges: Bool {
        assertOnQueue()
        return !insertedSet.isEmpty || !updatedSet.isEmpty || !deletedSet.isEmpty
    }

    /// Objects inserted and not yet saved.
    public var insertedObjects: Set<ManagedObject> { Set(insertedSet.values) }
    /// Objects with unsaved changes.
    public var updatedObjects: Set<ManagedObject> { Set(updatedSet.values) }
    /// Objects deleted and not yet saved.
    public var deletedObjects: Set<ManagedObject> { Set(deletedSet.values) }

    /// Runs an object setter that cannot throw; an error is kept and thrown by the next save.
    func recordingErrors(_ body: () throws -> Void) {
        do {
            try body()
        } catch let error as PostgresDataError {
            persistentStoreCoordinator.logger.error("\(error)")
            recordedErrors.append(error)
        } catch {
            recordedErrors.append(.invalidRequest("\(error)"))
        }
    }
}
