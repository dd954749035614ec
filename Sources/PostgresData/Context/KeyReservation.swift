import PostgresClient

/// The primary keys a context takes from the store while many new objects are being
/// inserted, so that a large save finds most of its keys ready instead of waiting for the
/// server to draw them.
///
/// Once ``threshold`` inserted objects wait for keys and no reservation is on its way, the
/// context asks the store for as many keys of each of their entities (`nextval`, as a save
/// does), in the background (on an idle connection's own thread when there is one), while
/// its caller goes on inserting. The objects keep their temporary IDs; a save or
/// `obtainPermanentIDs(for:)` hands out the reserved keys and asks the store only for the
/// rest, while it waits for a reservation still on its way; the objects take them ascending,
/// in the order they were inserted. Keys left unused (objects deleted before the save, a
/// rollback, a reset) are skipped values of the sequence, as a rolled-back `nextval`'s are;
/// a reservation that fails is forgotten, and the save asks for its keys itself and reports
/// any error.
///
/// No Core Data equivalent (Core Data's store draws keys at the save); the pooled key
/// allocation of Hibernate and the HiLo of Entity Framework work alike. Confined to its
/// context's queue, except the reservation's own task; the context counts the waiting objects
/// itself (``Demand``).
final class KeyReservation {
    /// From this many inserted objects waiting for keys, a reservation is sent.
    static let threshold = 4_096

    typealias Keys = [EntityDescription: [Int64]]

    private let coordinator: PersistentStoreCoordinator
    /// Keys drawn per entity, ascending, and how many of them were handed out.
    private var reserved: [ObjectIdentifier: (keys: [Int64], used: Int)] = [:]
    /// The reservation on its way: what it asked for, its task, and the keys it drew once it
    /// is back (none when it failed).
    private var inFlight: Arriving?

    /// A reservation on its way.
    struct Arriving: Sendable {
        /// The keys it asked for, per entity.
        let counts: [(EntityDescription, Int)]
        fileprivate let task: Task<Void, Never>
        fileprivate let arrived: Locked<Keys?>

        /// Waits for its keys (nil when it failed); cancelling the calling task cancels it.
        func keys() async -> Keys? {
            await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
            return arrived.withLock { $0 }
        }
    }

    init(coordinator: PersistentStoreCoordinator) {
        self.coordinator = coordinator
    }

    /// Sends a reservation for every object `demand` counts and takes them out of it, unless
    /// one is still on its way (the next then covers all that waited meanwhile).
    func reserve(_ demand: inout Demand) {
        if let inFlight {
            guard let keys = inFlight.arrived.withLock({ $0 }) else { return }
            self.inFlight = nil
            add(keys)
        }
        let counts = demand.take()
        let arrived = Locked<Keys?>(nil)
        let task = coordinator.reserveKeys(counts) { keys in arrived.withLock { $0 = keys } }
        inFlight = Arriving(counts: counts, task: task, arrived: arrived)
    }

    /// The reservation on its way, if any, which the caller now waits for and hands back with
    /// ``add(_:)``: a save or `obtainPermanentIDs(for:)` draws the keys it still misses
    /// meanwhile.
    func takeArriving() -> Arriving? {
        defer { inFlight = nil }
        return inFlight
    }

    /// What remains of `counts` once the reserved keys, and those `arriving` asked for, are
    /// handed out (entities with none left out).
    func missing(from counts: [(EntityDescription, Int)], arriving: Arriving?) -> [(EntityDescription, Int)] {
        counts.compactMap { entity, count in
            let coming = arriving?.counts.first { $0.0 === entity }?.1 ?? 0
            let left = count - coming - (reserved[ObjectIdentifier(entity)].map { $0.keys.count - $0.used } ?? 0)
            return left > 0 ? (entity, left) : nil
        }
    }

    /// Hands out reserved keys for `counts`: as many of each entity as are reserved, up to
    /// its count, ascending.
    func take(_ counts: [(EntityDescription, Int)]) -> Keys {
        var taken: Keys = [:]
        for (entity, count) in counts {
            guard let (keys, used) = reserved[ObjectIdentifier(entity)], used < keys.count else { continue }
            let end = min(keys.count, used + count)
            taken[entity] = Array(keys[used..<end])
            reserved[ObjectIdentifier(entity)]?.used = end
        }
        return taken
    }

    /// Forgets the objects waiting and the keys left (a save gave its objects keys; a
    /// rollback or a reset dropped them).
    func clear() {
        inFlight = nil
        reserved = [:]
    }

    /// Keeps keys drawn for this reservation, to be handed out after those kept before.
    func add(_ keys: Keys) {
        for (entity, drawn) in keys {
            reserved[ObjectIdentifier(entity), default: ([], 0)].keys.append(contentsOf: drawn)
        }
    }
}

extension KeyReservation {
    /// The inserted objects no reservation covers yet, per entity, counted by the context in
    /// place as each one is inserted: the entity of the latest run of inserts is compared by
    /// identity and its run counted, so that noting an object costs no reference counting
    /// (a save of 100,000 new objects notes each one).
    struct Demand {
        /// The entity of the latest run of inserts (entity descriptions are immortal), and
        /// its identity, compared without touching the reference.
        private unowned(unsafe) var runEntity: EntityDescription?
        private var runIdentity: ObjectIdentifier?
        private var run = 0
        /// The counts of the runs before it, per entity (a save's few entities).
        private var earlier: [(entity: EntityDescription, count: Int)] = []
        /// Objects counted in all.
        private(set) var count = 0

        /// Counts a new object of `entity`; true when a reservation is due: from
        /// ``KeyReservation/threshold`` objects on, every 512 (whether one on its way is back
        /// is looked at that often).
        @inline(__always)
        mutating func note(_ entity: EntityDescription) -> Bool {
            if runIdentity == ObjectIdentifier(entity) {
                run += 1
            } else {
                startRun(of: entity)
            }
            count += 1
            return count >= KeyReservation.threshold && count % 512 == 0
        }

        private mutating func startRun(of entity: EntityDescription) {
            endRun()
            runEntity = entity
            runIdentity = ObjectIdentifier(entity)
            run = 1
        }

        /// Adds the latest run to the counts of its entity.
        private mutating func endRun() {
            guard let entity = runEntity, run > 0 else { return }
            if let slot = earlier.firstIndex(where: { $0.entity === entity }) {
                earlier[slot].count += run
            } else {
                earlier.append((entity, run))
            }
            run = 0
        }

        /// The counts per entity, in the order entities were first met, and an empty demand.
        mutating func take() -> [(EntityDescription, Int)] {
            endRun()
            defer { self = Demand() }
            return earlier.map { ($0.entity, $0.count) }
        }
    }
}
