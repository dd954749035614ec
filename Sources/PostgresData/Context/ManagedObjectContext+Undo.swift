/// Undo and redo: each event's changes (values, relationships, inserts, deletes) as one
/// group of the context's ``undoManager``.
extension ManagedObjectContext {
    /// An object's state as undoing or redoing an event puts it back.
    struct UndoState {
        enum Membership { case absent, inserted, registered, deleted }
        var membership: Membership
        var values: PropertyValues
        var relationshipSets: [Int: RelationshipSet]
    }

    /// Objects with the state each had before its first change of the current event.
    typealias UndoBaselines = [ObjectIdentifier: (object: ManagedObject, before: UndoState)]

    /// Records changes for undo when set (nil, the default, records nothing and costs
    /// nothing). Each event's changes — a `perform` block, or what happened up to
    /// ``processPendingChanges()`` — form one group: values, to-one and to-many relationship
    /// edits (inverses included), inserts and deletes (with what their delete rules did).
    /// A save ends nothing: undoing after it changes the objects again, for the next save.
    /// ``rollback()`` and ``reset()`` empty it. Use it on the context's queue.
    ///
    /// Core Data equivalent: the property of the same name, with Foundation's `UndoManager`
    /// (``UndoManager`` here, which has its API, since Foundation on Linux has none).
    public var undoManager: UndoManager? {
        get {
            assertOnQueue()
            return undoManagerStorage
        }
        set {
            assertOnQueue()
            undoManagerStorage = newValue
            undoBaselines = [:]
        }
    }

    /// Undoes the last group of changes (ending the current event first).
    ///
    /// Core Data equivalent: `undo()`.
    public func undo() {
        assertOnQueue()
        processPendingChanges()
        undoManagerStorage?.undo()
        processPendingChanges()
    }

    /// Redoes the group of changes last undone.
    ///
    /// Core Data equivalent: `redo()`.
    public func redo() {
        assertOnQueue()
        processPendingChanges()
        undoManagerStorage?.redo()
        processPendingChanges()
    }

    /// Notes `object`'s state before it changes, the first time it changes in this event.
    @inline(__always)
    func willChangeForUndo(_ object: ManagedObject) {
        guard let manager = undoManagerStorage, !isApplyingUndo, manager.isUndoRegistrationEnabled else { return }
        let key = ObjectIdentifier(object)
        guard undoBaselines[key] == nil else { return }
        undoBaselines[key] = (object, undoState(of: object))
    }

    /// Registers the event's changes as one undo action (called as the event ends).
    func registerUndoForEvent() {
        guard !undoBaselines.isEmpty else { return }
        let baselines = undoBaselines
        undoBaselines = [:]
        guard let manager = undoManagerStorage else { return }
        let before = baselines.values.map { ($0.object, $0.before) }
        let after = before.map { object, _ in (object, undoState(of: object)) }
        manager.registerUndo(withTarget: self) { context in context.restore(before, reverting: after) }
    }

    /// Puts `states` back, registering the action that puts `reverting` back (the redo of
    /// an undo, or the undo of a redo).
    private func restore(_ states: [(ManagedObject, UndoState)], reverting: [(ManagedObject, UndoState)]) {
        isApplyingUndo = true
        for (object, state) in states { apply(state, to: object) }
        isApplyingUndo = false
        undoManagerStorage?.registerUndo(withTarget: self) { context in context.restore(reverting, reverting: states) }
    }

    private func undoState(of object: ManagedObject) -> UndoState {
        let membership: UndoState.Membership
        if object.contextStorage !== self {
            membership = .absent
        } else if object.isInsertedStorage {
            membership = .inserted
        } else if object.isDeletedStorage {
            membership = .deleted
        } else {
            membership = .registered
        }
        let values = object.isFaultStorage ? PropertyValues([]) : object.values
        return UndoState(membership: membership, values: values, relationshipSets: object.relationshipSets)
    }

    private func apply(_ state: UndoState, to object: ManagedObject) {
        let key = ObjectIdentifier(object)
        // An object with a row (saved since) cannot leave unsaved: it is deleted instead.
        let hasRow = object.snapshot != nil
        var membership = state.membership
        if hasRow && membership == .absent { membership = .deleted }
        if hasRow && membership == .inserted { membership = .registered }
        if !hasRow && membership == .deleted { membership = .absent }

        if membership == .absent {
            insertedSet[key] = nil
            updatedSet[key] = nil
            deletedSet[key] = nil
            if object.contextStorage === self {
                registered.remove(object)
                object.managedObjectContext = nil
            }
            object.isInsertedStorage = false
            object.isDeletedStorage = false
            pendingChanges.deleted.insert(object.objectID)
            return
        }
        if object.contextStorage !== self {
            guard registered.insert(object).inserted else { return }
            object.join(self)
        }
        if !state.values.isEmpty {
            object.isFaultStorage = false
            object.values = state.values
        }
        object.relationshipSets = state.relationshipSets
        var changed = PropertySet()
        if let snapshot = object.snapshot, membership != .inserted {
            let values = object.values
            for index in 0..<values.count where values[index] != snapshot.values[index] { changed.insert(index) }
        }
        object.changedProperties = changed
        object.isInsertedStorage = membership == .inserted
        object.isDeletedStorage = membership == .deleted
        insertedSet[key] = membership == .inserted ? object : nil
        deletedSet[key] = membership == .deleted ? object : nil
        updatedSet[key] = object.isUpdated ? object : nil
        switch membership {
        case .inserted: pendingChanges.inserted.append(object.objectID)
        case .deleted: pendingChanges.deleted.insert(object.objectID)
        default: pendingChanges.noteUpdated(object)
        }
    }
}
