/// What happened to an object's values when ``ManagedObject/awake(fromSnapshotEvents:)`` is called.
///
/// Core Data equivalent: `NSSnapshotEventType`.
public struct SnapshotEventType: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// ``ManagedObjectContext/rollback()`` put the object back on its saved values.
    public static let rollback = SnapshotEventType(rawValue: 1 << 3)
    /// ``ManagedObjectContext/refresh(_:mergeChanges:)`` (with `mergeChanges`) or a merged save
    /// put newer saved values under the object's own changes.
    public static let refresh = SnapshotEventType(rawValue: 1 << 4)
    /// A save's merge policy resolved a conflict by changing the object's values.
    public static let mergePolicy = SnapshotEventType(rawValue: 1 << 5)
}

extension ManagedObject {
    /// Calls `willSave()` on every object the save writes; again, round after round, on the
    /// objects the previous round changed, inserted or deleted (Core Data's rule), so that
    /// every change a hook makes is saved and seen by the hooks. Returns the objects the save
    /// writes.
    static func callWillSave(in context: ManagedObjectContext) throws -> ChangedObjects {
        var pending = context.changedObjectsInSaveOrder()
        let listed = context.changeSetMembership
        defer { context.hookChanges = nil }
        for round in 0..<100 {
            context.hookChanges = []
            pending.forEachBorrowed { $0.willSave() }
            let touched = context.hookChanges ?? []
            context.hookChanges = nil
            context.processPendingChanges()
            guard !touched.isEmpty else {
                // No hook changed anything, and no observer of the change notifications either:
                // the objects listed first are the ones the save writes.
                return round == 0 && context.changeSetMembership == listed ? pending : context.changedObjectsInSaveOrder()
            }
            // The next round: each touched object once, if the save still writes it.
            var seen = Set<ObjectIdentifier>()
            pending = ChangedObjects(touched.filter { object in
                seen.insert(ObjectIdentifier(object)).inserted && object.managedObjectContext === context && object.hasChanges
            })
            if pending.isEmpty { return context.changedObjectsInSaveOrder() }
        }
        throw PostgresDataError.invalidRequest("willSave() kept changing objects for 100 rounds; a hook must set a value only when it differs")
    }
}
