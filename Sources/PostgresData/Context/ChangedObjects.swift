/// The objects a save writes — inserted, then updated, then deleted — as the context's change
/// sets listed them: their lists shared, not copied object by object, so that listing the
/// objects of a save of 100,000 new ones retains none of them again. Objects a change set
/// lost after the lists were taken stay listed; the lists keep their objects alive.
struct ChangedObjects {
    private let lists: [[ManagedObject?]]

    /// The objects of the context's change sets now.
    init(of context: ManagedObjectContext) {
        lists = [context.insertedSet.slots, context.updatedSet.slots, context.deletedSet.slots]
    }

    /// `objects`, in their order.
    init(_ objects: [ManagedObject]) {
        lists = [objects.map(Optional.some)]
    }

    /// True when no object is listed.
    var isEmpty: Bool {
        lists.allSatisfy { list in list.allSatisfy { $0 == nil } }
    }

    /// Calls `body` with each object, in order, borrowed (no retain and release of each).
    func forEachBorrowed(_ body: (ManagedObject) throws -> Void) rethrows {
        for list in lists { try list.forEachBorrowed(body) }
    }
}
