/// Changes since the last objects-did-change notification.
struct PendingChanges {
    var inserted: [ManagedObjectID] = []
    /// Objects whose values changed, each listed once: an object's `isPendingUpdate` says it is
    /// here, so that noting a change costs no hashing (a save of many changed objects notes
    /// each one).
    private(set) var updatedObjects: [ManagedObject] = []
    var deleted: Set<ManagedObjectID> = []
    var refreshed: Set<ManagedObjectID> = []

    var isEmpty: Bool { inserted.isEmpty && updatedObjects.isEmpty && deleted.isEmpty && refreshed.isEmpty }

    /// Notes that `object`'s values changed.
    mutating func noteUpdated(_ object: ManagedObject) {
        guard !object.isPendingUpdate else { return }
        object.isPendingUpdate = true
        updatedObjects.append(object)
    }

    /// Forgets every change, once notified or discarded.
    mutating func removeAll() {
        for object in updatedObjects { object.isPendingUpdate = false }
        self = PendingChanges()
    }
}
