/// The primary keys a context asks the store for: how many per entity for the inserted
/// objects that have none yet, and which objects take them once they come.
///
/// Pure bookkeeping, no I/O: the context makes one, the coordinator allocates its
/// ``counts`` (`nextval` of each entity's sequence), and ``assign(_:)`` hands each object
/// its key in the order the objects were listed.
struct KeyRequest<Objects: Sequence<ManagedObject>> {
    /// The objects listed (an array, or a view of the context's inserted objects), each with
    /// the index of its entity in ``counts`` (−1: it needs no key).
    private let objects: Objects
    private let slots: [Int]
    /// How many keys each entity needs, entities in the order they were first met.
    let counts: [(EntityDescription, Int)]

    /// The keys `objects` need (those still temporary and without an allocated key), or nil
    /// when none does.
    init?(for objects: Objects) {
        // A save touches few entities: small arrays searched by identity beat hashing per object.
        var entities: [EntityDescription] = []
        var counts: [Int] = []
        var slots: [Int] = []
        slots.reserveCapacity(objects.underestimatedCount)
        for object in objects {
            guard object.objectID.isTemporaryID && object.allocatedKey == 0 else {
                slots.append(-1)
                continue
            }
            let slot = entities.firstIndex { $0 === object.entity } ?? {
                entities.append(object.entity)
                counts.append(0)
                return entities.count - 1
            }()
            counts[slot] += 1
            slots.append(slot)
        }
        guard !entities.isEmpty else { return nil }
        self.objects = objects
        self.slots = slots
        self.counts = Array(zip(entities, counts))
    }

    /// The number of keys asked for.
    var total: Int { counts.reduce(0) { $0 + $1.1 } }

    /// Gives each listed object that still needs a key one of `allocated`'s, as long as it
    /// is still an inserted object of `context` (a will-save hook may have deleted it while
    /// the keys were on their way; its key is then left unused, as a rolled-back `nextval` is).
    func assign(_ allocated: [EntityDescription: [Int64]], in context: ManagedObjectContext) throws {
        var keys: [[Int64]] = []
        for (entity, count) in counts {
            guard let allocatedKeys = allocated[entity], allocatedKeys.count >= count else {
                throw PostgresDataError.invalidRequest("the store allocated fewer keys for \(entity.name) than asked for")
            }
            keys.append(allocatedKeys)
        }
        var next = [Int](repeating: 0, count: counts.count)
        for (object, slot) in zip(objects, slots) where slot >= 0 {
            let key = keys[slot][next[slot]]
            next[slot] += 1
            guard object.managedObjectContext === context, object.objectID.isTemporaryID, object.allocatedKey == 0 else { continue }
            object.allocatedKey = key
        }
    }
}
