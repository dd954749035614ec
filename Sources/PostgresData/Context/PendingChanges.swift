/// Changes since the last objects-did-change notification.
struct PendingChanges {
    var inserted: [ManagedObjectID] = []
    var updated: Set<ManagedObjectID> = []
    var deleted: Set<ManagedObjectID> = []
    var refreshed: Set<ManagedObjectID> = []

    var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty }
}
