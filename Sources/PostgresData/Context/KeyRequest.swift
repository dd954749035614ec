/// The primary keys a context asks the store for: how many per entity for the inserted
/// objects that have none yet, and which objects take them once they come.
///
/// Pure bookkeeping, no I/O: the context makes one, the coordinator allocates its
/// ``counts`` (`nextval` of each entity's sequence), and ``assign(_:to:)`` hands each object
/// its key in the order the objects were listed. Objects are named by their position among
/// the context's inserted objects (``ObjectSet``), which keeps their allocated keys.
struct KeyRequest {
    /// The positions of the objects that need keys, each with the index of its entity in
    /// ``counts``.
    private let positions: [Int]
    private let slots: [Int]
    /// How many keys each entity needs, entities in the order they were first met.
    let counts: [(EntityDescription, Int)]
    /// The inserted objects' membership when the request was made: while it holds, each
    /// listed position still holds the object it named.
    private let membership: ObjectSet.Membership

    /// The keys the inserted objects at `chosen` positions (all when nil) need: those still
    /// temporary and without an allocated key. Nil when none does.
    init?(_ inserted: ObjectSet, at chosen: [Int]? = nil) {
        // A save touches few entities: small arrays searched by identity beat hashing per object.
        var entities: [EntityDescription] = []
        var counts: [Int] = []
        var positions: [Int] = []
        var slots: [Int] = []
        if chosen == nil {
            positions.reserveCapacity(inserted.count)
            slots.reserveCapacity(inserted.count)
        }
        // The entity of the run of objects under way, compared by identity: a run of one
        // entity (the usual save) looks nothing up and takes no reference per object.
        var run: (entity: ObjectIdentifier, slot: Int)?
        // A plain loop, not a closure over these arrays: its captures would cost an
        // exclusivity check per object.
        for offset in 0..<(chosen?.count ?? inserted.endPosition) {
            let position = chosen?[offset] ?? offset
            guard let id = inserted.objectID(at: position), id.isTemporaryID,
                  inserted.allocatedKey(at: position) == 0 else { continue }
            let slot: Int
            if let run, run.entity == ObjectIdentifier(id.entity) {
                slot = run.slot
            } else {
                let entity = id.entity
                if let known = entities.firstIndex(where: { $0 === entity }) {
                    slot = known
                } else {
                    entities.append(entity)
                    counts.append(0)
                    slot = entities.count - 1
                }
                run = (ObjectIdentifier(entity), slot)
            }
            counts[slot] += 1
            positions.append(position)
            slots.append(slot)
        }
        guard !entities.isEmpty else { return nil }
        membership = inserted.membership
        self.positions = positions
        self.slots = slots
        self.counts = Array(zip(entities, counts))
    }

    /// The number of keys asked for.
    var total: Int { counts.reduce(0) { $0 + $1.1 } }

    /// Gives each listed object that still needs a key one of `allocated`'s. Keys of one
    /// entity are alike: a will-save hook may have deleted objects while the keys were on their
    /// way (the positions then hold other objects, or none), and each position's object takes
    /// the next key of its entity if it is still temporary and without one; keys left over are
    /// unused, as a rolled-back `nextval`'s are. When no object joined or left the set since
    /// the request was made and every key came, each position takes its key without its
    /// object being read again. Fewer keys than asked for suffice when the objects short of
    /// one took theirs meanwhile (a will-save hook's `obtainPermanentIDs(for:)`, which may
    /// hand out keys reserved for this request).
    func assign(_ allocated: [EntityDescription: [Int64]], to inserted: inout ObjectSet) throws {
        var keys: [[Int64]] = []
        var complete = true
        for (entity, count) in counts {
            let allocatedKeys = allocated[entity] ?? []
            complete = complete && allocatedKeys.count >= count
            keys.append(allocatedKeys)
        }
        var next = [Int](repeating: 0, count: counts.count)
        if complete && inserted.membership == membership {
            for (position, slot) in zip(positions, slots) {
                inserted.setAllocatedKey(keys[slot][next[slot]], at: position)
                next[slot] += 1
            }
            return
        }
        for (position, slot) in zip(positions, slots) {
            guard let id = inserted.objectID(at: position), id.entity === counts[slot].0,
                  id.isTemporaryID, inserted.allocatedKey(at: position) == 0 else { continue }
            guard next[slot] < keys[slot].count else {
                throw PostgresDataError.invalidRequest("the store allocated fewer keys for \(counts[slot].0.name) than its new objects need")
            }
            inserted.setAllocatedKey(keys[slot][next[slot]], at: position)
            next[slot] += 1
        }
    }
}
