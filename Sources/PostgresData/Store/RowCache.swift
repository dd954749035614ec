import PostgresClient
import Synchronization

/// The coordinator's cache of row snapshots, shared by its contexts.
///
/// Core Data keeps the same cache in its coordinator: a fault in any context is filled from
/// it without a query when another context has the row. Entries live while some context
/// holds an object of the row (one reference per context), and saves replace them with
/// the new values and version. Rows are kept per entity by primary key: a fetch of a
/// million rows then costs a million integer-keyed inserts, with no reference counting
/// of keys.
///
/// Faults of an asynchronous fetch, or of an ordinary fetch of more than 5,000 rows, do not
/// enter it: each keeps its row to itself (``ManagedObject/pendingRow``), and keeps it to
/// itself once filled, which spares a million inserts (and a million removals when the
/// context lets go of them). For them the cache
/// remembers what changed while their fetch lives (a ``Reader``): a row saved, merged or
/// found changed since the fetch began is kept, even when no context holds it any more, so
/// that such a fault fires with the newer row, as it would from the cache
/// (``row(for:pending:)``).
final class RowCache: Sendable {
    private struct Entry {
        /// Nil once the row is known to have changed without its new values (a remote or
        /// batch change): the next reader loads it from the database.
        var snapshot: RowSnapshot?
        var references: Int32
        /// When the database last gave this row (``RowCache/stamp()``), for contexts with a
        /// ``ManagedObjectContext/stalenessInterval``.
        var stamp: UInt32
        /// ``generation``, and in the top bit ``changedWhileReading`` (an entry stays 32 bytes).
        private var bits: UInt64

        private static let changedFlag: UInt64 = 1 << 63

        init(snapshot: RowSnapshot?, references: Int32, changedWhileReading: Bool = false, generation: UInt64, stamp: UInt32) {
            self.snapshot = snapshot
            self.references = references
            self.stamp = stamp
            self.bits = generation | (changedWhileReading ? Self.changedFlag : 0)
        }

        /// When the snapshot was last set (``State/generation``).
        var generation: UInt64 {
            get { bits & ~Self.changedFlag }
            set { bits = newValue | (bits & Self.changedFlag) }
        }

        /// Set when the row changed while a reader lived: kept after its last reference.
        var changedWhileReading: Bool {
            get { bits & Self.changedFlag != 0 }
            set { bits = newValue ? bits | Self.changedFlag : bits & ~Self.changedFlag }
        }

        /// A fetched row: a new entry takes it, and so does one whose row it holds in
        /// another version (the row changed since) or not at all. True when it changed.
        mutating func retain(_ fetched: RowSnapshot, generation next: UInt64, reading: Bool, stamp now: UInt32) -> Bool {
            references += 1
            // A slow fetch may bring a row older than the one a save or a faster read cached:
            // row versions are transaction IDs, compared modulo 2³² as PostgreSQL does.
            if let snapshot {
                let age = Int32(bitPattern: fetched.version &- snapshot.version)
                if age == 0 { stamp = max(stamp, now) }
                if age <= 0 { return false }
            }
            let isNew = snapshot == nil && generation == 0
            if reading && !isNew { changedWhileReading = true }
            snapshot = fetched
            generation = next
            stamp = now
            return true
        }
    }

    /// A primary key, hashed so that runs of keys take runs of buckets (``KeyRunHashing``).
    private struct Key: Hashable {
        let value: Int64

        init(_ value: Int64) { self.value = value }

        func hash(into hasher: inout Hasher) { hasher.combine(value) }
        func _rawHashValue(seed: Int) -> Int { KeyRunHashing.hashValue(of: value, salt: 0, seed: seed) }
    }

    private struct KeptEntry: Hashable {
        let entity: Int
        let key: Key
    }

    private struct State {
        /// Indexed by the entity's index in the model.
        var entries: [[Key: Entry]] = []
        /// Counts every change of a snapshot; readers start at a generation.
        var generation: UInt64 = 0
        /// The generations of the live readers (ascending; several may share one).
        var readers: [UInt64] = []
        /// Entries kept without references for the readers.
        var kept: Set<KeptEntry> = []

        mutating func next() -> UInt64 {
            generation += 1
            return generation
        }

        var isReading: Bool { !readers.isEmpty }

        mutating func table(_ index: Int) -> Int {
            while entries.count <= index { entries.append([:]) }
            return index
        }

        /// Gives back the room of tables that removals left less than an eighth full (one per
        /// entity: a look at each is cheap). A dictionary keeps its capacity as entries leave,
        /// and the coordinator lives as long as the process: a million rows cached once would
        /// hold their table (about 84 MB) for good.
        mutating func shrinkSparseTables() {
            for index in entries.indices {
                let table = entries[index]
                guard table.capacity > RowCache.smallestShrunkCapacity, table.count < table.capacity / 8 else { continue }
                var smaller = [Key: Entry](minimumCapacity: table.count * 2)
                for (key, entry) in table { smaller[key] = entry }
                entries[index] = smaller
            }
        }

        /// Records that the row changed: the entry takes `snapshot` (nil: changed, values
        /// unknown), and stays for the readers even without references.
        mutating func change(_ id: ManagedObjectID, to snapshot: RowSnapshot?, stamp: UInt32) {
            guard let key = id.primaryKey else { return }
            let index = id.entity.modelIndex
            let generation = next()
            if entries.indices.contains(index), let position = entries[index].index(forKey: Key(key)) {
                // One hash lookup: the entry is changed at its position.
                entries[index].values[position].snapshot = snapshot
                entries[index].values[position].generation = generation
                entries[index].values[position].stamp = stamp
                if isReading { entries[index].values[position].changedWhileReading = true }
            } else if isReading {
                entries[table(index)][Key(key)] = Entry(snapshot: snapshot, references: 0, changedWhileReading: true,
                                                        generation: generation, stamp: stamp)
                kept.insert(KeptEntry(entity: index, key: Key(key)))
            }
        }
    }

    /// A fetch whose faults keep their rows to themselves: while it lives, the cache keeps
    /// the rows that change. Its ``generation`` tells a fault's row from newer ones.
    final class Reader: Sendable {
        let generation: UInt64
        /// When the reader began: its rows are at least this fresh.
        let stamp: UInt32
        private let cache: RowCache

        fileprivate init(cache: RowCache, generation: UInt64, stamp: UInt32) {
            self.cache = cache
            self.generation = generation
            self.stamp = stamp
        }

        deinit { cache.endReading(generation) }
    }

    private let state = Locked(State())
    /// The generation of the entry that took a snapshot last (set under the lock): a fault
    /// whose reader began at or after it finds no newer row without taking the lock.
    private let latestEntryGeneration = Atomic<UInt64>(0)
    private let start = ContinuousClock.now

    /// Tables with room for this many entries or fewer keep it as entries leave.
    static let smallestShrunkCapacity = 4096

    /// The bytes an entry takes in the cache's tables (a million rows: a million entries).
    static var entryStride: Int { MemoryLayout<Entry>.stride }

    /// Now, in 1/64 s since the cache began (two years fit): the time rows entered it.
    func stamp() -> UInt32 {
        let elapsed = start.duration(to: .now).components
        return UInt32(clamping: elapsed.seconds * 64 + elapsed.attoseconds / 15_625_000_000_000_000)
    }

    /// The oldest stamp a row may have for a reader accepting rows `maximumAge` old (nil: any).
    func oldestStamp(for maximumAge: Duration?) -> UInt32? {
        guard let maximumAge else { return nil }
        let age = maximumAge.components
        let ticks = max(0, age.seconds * 64 + age.attoseconds / 15_625_000_000_000_000)
        return UInt32(clamping: Int64(stamp()) - ticks + (maximumAge > .zero ? 0 : 1))
    }

    /// Starts a reader; take it before the fetch's query is sent, so that every change the
    /// query's snapshot may miss comes after its generation.
    func beginReading() -> Reader {
        state.withLock { state in startReader(in: &state, stamp: stamp()) }
    }

    /// A reader at the next generation; call it holding the lock.
    private func startReader(in state: inout State, stamp: UInt32) -> Reader {
        let generation = state.next()
        state.readers.append(generation)
        return Reader(cache: self, generation: generation, stamp: stamp)
    }

    /// Where the cache stands before a fetch's query is sent, for a reader begun once its
    /// result is known to be large (``beginReading(unchangedSince:)``): most fetches are small,
    /// and a reader per fetch would make every save keep its rows for it.
    struct Mark: Sendable {
        fileprivate let generation: UInt64
        fileprivate let stamp: UInt32
    }

    func mark() -> Mark {
        Mark(generation: latestEntryGeneration.load(ordering: .acquiring), stamp: stamp())
    }

    /// A reader for rows a query sent after `mark` read, as if begun before it; nil when an
    /// entry changed since the mark (such a row may be newer than the query's: the fetch's
    /// rows then go through the cache, which keeps the newer version).
    func beginReading(unchangedSince mark: Mark) -> Reader? {
        state.withLock { state in
            guard latestEntryGeneration.load(ordering: .acquiring) <= mark.generation else { return nil }
            return startReader(in: &state, stamp: mark.stamp)
        }
    }

    private func endReading(_ generation: UInt64) {
        state.withLock { state in
            if let position = state.readers.firstIndex(of: generation) { state.readers.remove(at: position) }
            let oldest = state.readers.first ?? .max
            state.kept = state.kept.filter { kept in
                guard let entry = state.entries[kept.entity][kept.key], entry.references == 0 else { return false }
                if entry.generation > oldest { return true }
                state.entries[kept.entity][kept.key] = nil
                return false
            }
            state.shrinkSparseTables()
        }
    }

    /// The cached row of `id`, if any; with `oldest`, only if the database gave it at that stamp or later.
    func snapshot(for id: ManagedObjectID, oldest: UInt32? = nil) -> RowSnapshot? {
        guard let key = id.primaryKey else { return nil }
        let index = id.entity.modelIndex
        return state.withLock { state in
            guard state.entries.indices.contains(index), let entry = state.entries[index][Key(key)],
                  entry.stamp >= oldest ?? 0 else { return nil }
            return entry.snapshot
        }
    }

    /// What fills a fault that kept its row (`pending`, fetched by a reader): a row the cache
    /// got since the reader began (`.newer`), nothing when the row changed without its values
    /// being known (`.changed`: load it), else the fault's own row.
    enum FaultRow {
        case own, newer(RowSnapshot), changed
    }

    /// Whether a fault's own row is the newest the cache can know of, without the lock: no
    /// entry changed since its reader began, and it is not older than `oldest`. (False does
    /// not say the row changed: ask ``row(for:pending:oldest:)``.) The reader is given by
    /// its generation and start: a fault reads them where it kept them, taking no reference.
    @inline(__always)
    func isCurrent(generation: UInt64, stamp: UInt32, oldest: UInt32?) -> Bool {
        latestEntryGeneration.load(ordering: .acquiring) <= generation && stamp >= oldest ?? 0
    }

    func row(for id: ManagedObjectID, pending: RowSnapshot, oldest: UInt32? = nil) -> FaultRow {
        // No entry changed since the fault's reader began: its own row, as below.
        if let reader = pending.readingMark, isCurrent(generation: reader.generation, stamp: reader.stamp, oldest: oldest) {
            return .own
        }
        return state.withLock { state in Self.row(for: id, pending: pending, oldest: oldest, in: state) }
    }

    /// ``row(for:pending:oldest:)`` for many faults, in one lock. With `oldest`, rows the
    /// database gave before that stamp (the fault's own, taken when its reader began, or the
    /// cache's) are `.changed`: read again.
    func rows(for faults: some Collection<(ManagedObjectID, RowSnapshot)>, oldest: UInt32? = nil) -> [FaultRow] {
        state.withLock { state in
            faults.map { id, pending in Self.row(for: id, pending: pending, oldest: oldest, in: state) }
        }
    }

    private static func row(for id: ManagedObjectID, pending: RowSnapshot, oldest: UInt32?, in state: State) -> FaultRow {
        // Its reading let the reader go: changes since were not kept for it.
        if pending.hasLapsedReading { return .changed }
        guard let key = id.primaryKey, let reader = pending.readingMark,
              state.entries.indices.contains(id.entity.modelIndex),
              let entry = state.entries[id.entity.modelIndex][Key(key)],
              entry.generation > reader.generation else {
            if let oldest, (pending.readingMark?.stamp ?? 0) < oldest { return .changed }
            return .own
        }
        guard let snapshot = entry.snapshot, entry.stamp >= oldest ?? 0 else { return .changed }
        return .newer(snapshot)
    }

    /// The cached snapshots of `ids` (nil where there is none, or where the database gave it
    /// before `oldest`), in one lock.
    func snapshots(for ids: [ManagedObjectID], oldest: UInt32? = nil) -> [RowSnapshot?] {
        state.withLock { state in
            ids.map { id in
                guard let key = id.primaryKey, state.entries.indices.contains(id.entity.modelIndex),
                      let entry = state.entries[id.entity.modelIndex][Key(key)], entry.stamp >= oldest ?? 0 else { return nil }
                return entry.snapshot
            }
        }
    }

    /// Adds references for objects that now hold these snapshots (fetched rows); a different
    /// version replaces the cached one (the row changed since it was cached).
    func retain(_ pairs: some Sequence<(ManagedObjectID, RowSnapshot)>) {
        state.withLock { state in
            var reserved = -1
            let reading = state.isReading
            let now = stamp()
            for (id, snapshot) in pairs {
                guard let key = id.primaryKey else { continue }
                let index = id.entity.modelIndex
                if index != reserved {
                    state.entries[state.table(index)].reserve(pairs.underestimatedCount)
                    reserved = index
                }
                // One hash lookup per row: the entry is modified in place.
                if state.entries[index][Key(key), default: Entry(snapshot: nil, references: 0, generation: 0, stamp: now)]
                    .retain(snapshot, generation: state.generation + 1, reading: reading, stamp: now) {
                    state.generation += 1
                }
            }
            latestEntryGeneration.store(state.generation, ordering: .releasing)
        }
    }

    /// Makes room for `additional` more rows of `entity` (a large fetch about to arrive).
    func reserve(_ additional: Int, for entity: EntityDescription) {
        state.withLock { state in
            state.entries[state.table(entity.modelIndex)].reserve(additional)
        }
    }

    /// Rows a save wrote (or found written): their snapshots replace the cached ones,
    /// without adding references.
    func update(_ pairs: some Sequence<(ManagedObjectID, RowSnapshot)>) {
        let now = stamp()
        state.withLock { state in
            for (id, snapshot) in pairs { state.change(id, to: snapshot, stamp: now) }
            latestEntryGeneration.store(state.generation, ordering: .releasing)
        }
    }

    func release(_ ids: some Sequence<ManagedObjectID>) {
        state.withLock { state in
            let oldest = state.readers.first ?? .max
            for id in ids {
                guard let key = id.primaryKey, state.entries.indices.contains(id.entity.modelIndex) else { continue }
                let index = id.entity.modelIndex
                // One hash lookup per row: the entry is changed or removed at its position.
                guard let position = state.entries[index].index(forKey: Key(key)) else { continue }
                let entry = state.entries[index].values[position]
                if entry.references > 1 {
                    state.entries[index].values[position].references -= 1
                } else if entry.changedWhileReading && entry.generation > oldest {
                    state.entries[index].values[position].references = 0
                    state.kept.insert(KeptEntry(entity: index, key: Key(key)))
                } else {
                    state.entries[index].remove(at: position)
                }
            }
            state.shrinkSparseTables()
        }
    }

    /// Rows that changed with values the cache does not have (deleted, or changed by a batch
    /// request or another process): their entries no longer give a snapshot, and the next
    /// reader loads them from the database.
    func remove(_ ids: some Sequence<ManagedObjectID>) {
        state.withLock { state in
            for id in ids {
                guard let key = id.primaryKey else { continue }
                let index = id.entity.modelIndex
                if !state.isReading, state.entries.indices.contains(index),
                   let position = state.entries[index].index(forKey: Key(key)), state.entries[index].values[position].references == 0 {
                    state.entries[index].remove(at: position)
                } else {
                    // References stay counted: the objects holding them give them back later.
                    state.change(id, to: nil, stamp: 0)
                }
            }
            state.shrinkSparseTables()
            latestEntryGeneration.store(state.generation, ordering: .releasing)
        }
    }

    var count: Int { state.withLock { $0.entries.reduce(0) { $0 + $1.count } } }

    /// Entries the tables have room for without growing.
    var capacity: Int { state.withLock { $0.entries.reduce(0) { $0 + $1.capacity } } }

    /// Whether a reader is under way (the cache then keeps the rows that change).
    var isReading: Bool { state.withLock { $0.isReading } }
}

extension Dictionary {
    /// Makes room for `additional` more entries, at least doubling when it grows, so that
    /// many small calls do not resize every time.
    mutating func reserve(_ additional: Int) {
        guard capacity - count < additional else { return }
        reserveCapacity(Swift.max(count + additional, capacity * 2))
    }
}
