internal import CLibPQ
#if canImport(Glibc)
import Glibc
#endif

/// A context's identity map: at most one object per ``ManagedObjectID``, found by its ID.
///
/// An open-addressing table (linear probing, at most three quarters full) of the objects
/// themselves, each found through its own ``ManagedObject/objectID``: 8 bytes per slot, where
/// a `[ManagedObjectID: ManagedObject]` takes 32 — 48 MB less for a context holding a
/// million objects. The 3 low bits of a slot, free in an object reference (objects are at
/// least 8-byte aligned), hold 3 bits of the ID's hash: a probe reads an object only when
/// they match. Removal shifts the following entries back (no tombstones).
///
/// The map holds its objects strongly; ``sweep(limit:where:)`` lets go of those nothing else
/// holds (``ManagedObjectContext/retainsRegisteredObjects``). An object's ID must not change
/// while it is in the map: remove it, change the ID, insert it again. New objects with IDs
/// no other object has (``insertNew(_:)``) wait in a list until the map is next used, and
/// then enter it together: inserting 100,000 objects grows the table once, not 15 times.
/// So do the objects of a fetch into an empty map (``Claim``): a fetch read, then let go of
/// with ``removeAll(_:)``, never builds a table at all.
/// Confined to its context's queue.
final class IdentityMap {
    @exclusivity(unchecked) private var slots: UnsafeMutablePointer<UInt>?
    /// Whether `slots` is a mapping of its own (``allocateSlots(_:)``) rather than heap memory.
    @exclusivity(unchecked) private(set) var slotsAreMapped = false
    /// Slot count − 1 (the slot count is a power of two), or −1 before the first insertion.
    @exclusivity(unchecked) private var mask = -1
    /// The objects in the table (``count`` adds those waiting in `unplaced`).
    @exclusivity(unchecked) private var placed = 0
    /// Objects registered by ``insertNew(_:)``, not in the table yet.
    @exclusivity(unchecked) private var unplaced: [ManagedObject] = []
    /// Where the next ``sweep(limit:where:)`` starts, in the table and in `unplaced`.
    @exclusivity(unchecked) private var sweepCursor = 0
    @exclusivity(unchecked) private var unplacedSweepCursor = 0
    /// Counts the changes of the registered objects (not their placing): what a ``Claim`` holds.
    @exclusivity(unchecked) private var generation = 0
    // Keys come from the database, not from callers; a per-map seed still keeps one map's
    // clusters from being another's. Drawn from the process's random seed and the map's
    // address, not from the system's generator (a system call per context).
    @exclusivity(unchecked) private var seed = IdentityMap.processSeed
    private static let processSeed = Int.random(in: .min ... .max)

    init() {
        seed = Hasher.hash(seed, ObjectIdentifier(self))
    }

    deinit {
        guard let slots else { return }
        for index in 0...mask where slots[index] != 0 { Self.unmanaged(slots[index]).release() }
        Self.deallocateSlots(slots, count: mask + 1, mapped: slotsAreMapped)
    }

    /// How many objects are registered.
    var count: Int { placed + unplaced.count }

    var isEmpty: Bool { count == 0 }

    /// How many objects fit before the table grows.
    var capacity: Int { (mask + 1) / 4 * 3 }

    /// Registers an object whose ID no registered object has, as a new object's fresh
    /// temporary ID: it enters the table with the others waiting, when the map is next used.
    func insertNew(_ object: ManagedObject) {
        unplaced.append(object)
        generation &+= 1
    }

    /// A fetch's right to register its objects without looking their IDs up, given while the
    /// map is empty (``claimIfEmpty()``) and kept while the map changes only by that fetch's
    /// ``insertClaimed(_:claim:)``: no registered object can then have the ID of one of its
    /// rows, whose keys are distinct (one row per key in a statement's result).
    struct Claim {
        fileprivate var generation: Int
    }

    /// A ``Claim`` when no object is registered, else nil.
    func claimIfEmpty() -> Claim? {
        count == 0 ? Claim(generation: generation) : nil
    }

    /// Whether nothing but the claim's own insertions changed the map since it was given.
    func holds(_ claim: Claim) -> Bool {
        claim.generation == generation
    }

    /// Registers a fetched object under `claim`, which must hold (``holds(_:)``): it waits in
    /// the list of ``insertNew(_:)``, unlooked-up, until the map is next used.
    @inline(__always)
    func insertClaimed(_ object: ManagedObject, claim: inout Claim) {
        assert(holds(claim), "insertClaimed(_:claim:) under a claim that no longer holds")
        unplaced.append(object)
        generation &+= 1
        claim.generation = generation
    }

    /// Makes room for `additional` more objects where they will go: in the list of objects
    /// waiting to be placed under a `claim` that holds, else in the table (``reserve(_:)``).
    func reserve(_ additional: Int, under claim: Claim?) {
        guard let claim, holds(claim) else { return reserve(additional) }
        let wanted = unplaced.count + additional
        if unplaced.capacity < wanted { unplaced.reserveCapacity(Swift.max(wanted, 2 * unplaced.capacity)) }
    }

    /// Enters the objects waiting in `unplaced`, growing the table once for all of them.
    @inline(__always)
    private func place() {
        guard !unplaced.isEmpty else { return }
        placeUnplaced()
    }

    private func placeUnplaced() {
        let objects = unplaced
        unplaced = []
        unplacedSweepCursor = 0
        reserve(objects.count)
        // Placing changes where objects are, not which: claims still hold.
        let generation = generation
        for object in objects {
            let (_, isNew) = self.object(for: object.objectID) { object }
            assert(isNew, "insertNew(_:) or insertClaimed(_:claim:) with an ID already registered")
        }
        self.generation = generation
    }

    /// The object registered with `id`, if any.
    subscript(id: ManagedObjectID) -> ManagedObject? {
        place()
        guard placed > 0, let slots else { return nil }
        let (index, _, found) = probe(id, in: slots)
        return found ? Self.unmanaged(slots[index]).takeUnretainedValue() : nil
    }

    /// The object registered with `id`, or the one `make` returns (its ID must be `id`),
    /// registered in one probe; `isNew` tells which.
    @inline(__always)
    func object(for id: ManagedObjectID, insertingIfAbsent make: () -> ManagedObject) -> (object: ManagedObject, isNew: Bool) {
        place()
        if placed >= capacity { grow(to: placed + 1) }
        let slots = slots.unsafelyUnwrapped
        let (index, tag, found) = probe(id, in: slots)
        if found { return (Self.unmanaged(slots[index]).takeUnretainedValue(), false) }
        let object = make()
        assert(object.objectID == id)
        slots[index] = Self.slot(object, tag: tag)
        placed += 1
        generation &+= 1
        return (object, true)
    }

    /// Registers `object` under its ID unless an object is registered with that ID already;
    /// returns the object registered now.
    @discardableResult
    func insert(_ object: ManagedObject) -> (inserted: Bool, registered: ManagedObject) {
        let (registered, isNew) = self.object(for: object.objectID) { object }
        return (isNew, registered)
    }

    /// Removes and returns the object registered with `id`.
    @discardableResult
    func remove(_ id: ManagedObjectID) -> ManagedObject? {
        place()
        guard placed > 0, let slots else { return nil }
        let (index, _, found) = probe(id, in: slots)
        guard found else { return nil }
        return removeSlot(at: index, of: slots)
    }

    /// Removes `object` if it is the object registered with its ID (one probe); returns
    /// whether it was.
    @discardableResult
    func remove(_ object: ManagedObject) -> Bool {
        place()
        guard placed > 0, let slots, let index = slot(of: object, in: slots) else { return false }
        removeSlot(at: index, of: slots)
        return true
    }

    /// The slot of `object`, if it is the object registered with its ID.
    private func slot(of object: ManagedObject, in slots: UnsafeMutablePointer<UInt>) -> Int? {
        let (index, _, found) = probe(object.objectID, in: slots)
        guard found, Self.unmanaged(slots[index]).toOpaque() == Unmanaged.passUnretained(object).toOpaque() else { return nil }
        return index
    }

    /// Removes each of `objects` that `removable` accepts and that is the object registered
    /// with its ID, calling `removed` with it (which must not change the map).
    ///
    /// Closing each hole at once walks the rest of its run of slots, loading every object
    /// there (keys come in runs, and so do their slots): when the objects are half the map or
    /// more (a batch walk letting go of its batch), every slot is found first, emptied, and
    /// what stays placed again in one pass.
    func remove(_ objects: [ManagedObject], where removable: (ManagedObject) -> Bool, _ removed: (ManagedObject) -> Void) {
        place()
        guard placed > 0, let slots else { return }
        guard objects.count * 2 >= placed else {
            for object in objects where removable(object) && remove(object) { removed(object) }
            return
        }
        var emptied: [Int] = []
        emptied.reserveCapacity(objects.count)
        for object in objects where removable(object) {
            // A slot found is marked (and emptied after the loop, so that no probe stops
            // short): an object listed twice leaves once.
            guard let index = slot(of: object, in: slots), slots[index] & Self.leaving == 0 else { continue }
            slots[index] |= Self.leaving
            emptied.append(index)
            removed(object)
        }
        guard !emptied.isEmpty else { return }
        // The callers still hold the objects: releasing the map's references frees none here.
        for index in emptied {
            Self.unmanaged(slots[index]).release()
            slots[index] = 0
        }
        placed -= emptied.count
        generation &+= 1
        rebuild(size: mask + 1)
    }

    @discardableResult
    private func removeSlot(at index: Int, of slots: UnsafeMutablePointer<UInt>) -> ManagedObject {
        let removed = Self.unmanaged(slots[index]).takeRetainedValue()
        vacate(index, of: slots)
        return removed
    }

    /// Empties a slot whose reference was taken out, moving later entries back.
    private func vacate(_ index: Int, of slots: UnsafeMutablePointer<UInt>) {
        slots[index] = 0
        placed -= 1
        generation &+= 1
        // Entries after the hole that probed past it move back into it, so every entry
        // stays reachable from its home slot without a gap.
        var hole = index
        var next = (index + 1) & mask
        while slots[next] != 0 {
            let home = Self.unmanaged(slots[next]).takeUnretainedValue().objectID._rawHashValue(seed: seed) & mask
            // Whether `home` lies cyclically in (hole, next]: then the entry stays.
            let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !stays {
                slots[hole] = slots[next]
                slots[next] = 0
                hole = next
            }
            next = (next + 1) & mask
        }
    }

    /// Looks at up to `limit` slots from where the previous sweep stopped, removing the
    /// objects that nothing but the map references and that `removable` accepts (it may note
    /// them; it must not change the map). Returns how many left.
    ///
    /// An object's reference count is read in place: the map's reference moves into a cell
    /// and, when the object stays, back into the slot without a retain or a release.
    func sweep(limit: Int, where removable: (ManagedObject) -> Bool) -> Int {
        // Objects waiting to be placed first (fetched ones: new ones are held by their
        // context's inserted set), without placing them.
        let (looked, removedUnplaced) = sweepUnplaced(limit: limit, where: removable)
        guard let slots, placed > 0, looked < limit else { return removedUnplaced }
        let removed = withUnsafeTemporaryAllocation(of: ManagedObject.self, capacity: 1) { buffer in
            sweep(slots, limit: limit - looked, cell: buffer.baseAddress.unsafelyUnwrapped, where: removable)
        }
        shrinkIfSparse()
        return removedUnplaced + removed
    }

    /// Looks at up to `limit` objects waiting to be placed, from where the previous sweep
    /// stopped, removing those only the map holds that `removable` accepts (the last takes
    /// the place of each); returns how many it looked at and how many left.
    private func sweepUnplaced(limit: Int, where removable: (ManagedObject) -> Bool) -> (looked: Int, removed: Int) {
        guard !unplaced.isEmpty else { return (0, 0) }
        var index = unplacedSweepCursor < unplaced.count ? unplacedSweepCursor : 0
        // Each look is at another object: one that leaves is replaced by one not looked at yet.
        let looks = Swift.min(limit, unplaced.count)
        var looked = 0
        var removed = 0
        while looked < looks && !unplaced.isEmpty {
            looked += 1
            if isKnownUniquelyReferenced(&unplaced[index]) && removable(unplaced[index]) {
                unplaced.swapAt(index, unplaced.count - 1)
                // Released last, once the map no longer lists it.
                _ = unplaced.removeLast()
                removed += 1
                generation &+= 1
            } else {
                index += 1
            }
            if index >= unplaced.count { index = 0 }
        }
        unplacedSweepCursor = index
        return (looked, removed)
    }

    private func sweep(_ slots: UnsafeMutablePointer<UInt>, limit: Int, cell: UnsafeMutablePointer<ManagedObject>,
                       where removable: (ManagedObject) -> Bool) -> Int {
        var removed = 0
        var index = sweepCursor & mask
        for _ in 0..<Swift.min(limit, mask + 1) {
            let slot = slots[index]
            if slot != 0 {
                cell.initialize(to: Self.unmanaged(slot).takeRetainedValue())
                if isKnownUniquelyReferenced(&cell.pointee) && removable(cell.pointee) {
                    vacate(index, of: slots)
                    removed += 1
                    // Released last, once the map no longer names it; the slot may now hold
                    // an entry moved back, looked at next.
                    cell.deinitialize(count: 1)
                    continue
                }
                // Not deinitialized: the reference is the slot's again.
            }
            index = (index + 1) & mask
        }
        sweepCursor = index
        return removed
    }

    /// Removes every object, each given to `leaving` first (it must not change the map): one
    /// pass, each object read once, and lent to `leaving` under the map's own reference (not
    /// retained and released around the call: a million objects leave at a `reset()`).
    ///
    /// Many objects leave in the order of their addresses, not of their slots: objects
    /// allocated together (a fetch's, in key order) are read and freed together. (Freeing a
    /// million in slot order, runs of 8 in random places, missed the cache at every run and
    /// took 2.5 times as long.) The addresses are sorted in the table itself when it has twice
    /// as many slots as objects (a map grown to its size usually has): no fresh memory to
    /// fault in, and the table's huge pages under the sort's scattered writes.
    func removeAll(_ leaving: (ManagedObject) -> Void = { _ in }) {
        var waiting = unplaced
        unplaced = []
        unplacedSweepCursor = 0
        generation &+= 1
        // Each let go of right after `leaving` (last first), while it is still in the cache:
        // 100,000 new objects saved and let go of were read twice.
        while let object = waiting.popLast() { leaving(object) }
        guard let slots, placed > 0 else { return }
        defer { shrinkIfSparse() }
        guard placed >= Self.addressOrderThreshold else {
            for index in 0...mask where slots[index] != 0 {
                let object = Self.unmanaged(slots[index])
                object._withUnsafeGuaranteedRef { leaving($0) }
                object.release()
                slots[index] = 0
            }
            placed = 0
            return
        }
        let count = placed
        let inPlace = mask + 1 >= 2 * count
        let addresses = inPlace ? slots : UnsafeMutablePointer<UInt>.allocate(capacity: count)
        defer { if !inPlace { addresses.deallocate() } }
        var taken = 0
        var lowest = UInt.max
        var highest: UInt = 0
        // In place, each address moves to a slot at or before its own, already read.
        for index in 0...mask where slots[index] != 0 {
            let address = slots[index] & ~15
            slots[index] = 0
            addresses[taken] = address
            taken += 1
            lowest = Swift.min(lowest, address)
            highest = Swift.max(highest, address)
        }
        // No probe reads the slots holding addresses: every lookup stops at an empty map.
        placed = 0
        Self.sortByAddress(addresses, count: taken, from: lowest, to: highest, scratch: inPlace ? slots + taken : nil)
        for index in 0..<taken {
            let object = Self.unmanaged(addresses[index])
            object._withUnsafeGuaranteedRef { leaving($0) }
            object.release()
        }
        // A large table is about to be freed (``shrinkIfSparse()``): no need to clear it.
        if inPlace && mask + 1 <= Self.largestKeptSlotCount { slots.update(repeating: 0, count: 2 * taken) }
    }

    /// Tables of more slots than this shrink when removals leave them less than an eighth
    /// full: a context that lives on after a large fetch would otherwise hold its table
    /// (8 bytes a slot, two slots an object) until it goes.
    static let largestKeptSlotCount = 1 << 16

    /// Rebuilds a large table that removals (sweeps, ``removeAll(_:)``) left less than an
    /// eighth full to fit the objects that stay, or frees it when none does.
    private func shrinkIfSparse() {
        guard let slots, mask + 1 > Self.largestKeptSlotCount, placed * 8 < mask + 1 else { return }
        sweepCursor = 0
        guard placed == 0 else { return rebuild(size: Self.size(for: placed)) }
        Self.deallocateSlots(slots, count: mask + 1, mapped: slotsAreMapped)
        self.slots = nil
        slotsAreMapped = false
        mask = -1
    }

    /// From how many objects ``removeAll(_:)`` frees them in address order.
    static let addressOrderThreshold = 4096

    /// Sorts object addresses, all between `lowest` and `highest`, by the 64-byte line each
    /// starts in (objects of 64 bytes or more start in lines of their own): a radix sort of
    /// 11 bits a pass over the bits the span needs, at most three. Two passes cover 256 MiB
    /// (one thread's million objects spanned 76 and 639 MiB); three cover 512 GiB, beyond
    /// which (objects made on several threads, in heaps terabytes apart) addresses are sorted
    /// by their offset modulo 512 GiB: each heap's in order, unless it straddles a multiple of
    /// 512 GiB from the lowest. `scratch` (room for
    /// `count`) is allocated when nil.
    static func sortByAddress(_ addresses: UnsafeMutablePointer<UInt>, count: Int, from lowest: UInt, to highest: UInt,
                              scratch: UnsafeMutablePointer<UInt>?) {
        // From the lowest address's line: an address's key is its line, less that one's.
        let lowest = lowest & ~63
        let bits = UInt.bitWidth - ((highest &- lowest) >> 6).leadingZeroBitCount
        let passes = Swift.min(3, (bits + 10) / 11)
        guard passes > 0 else { return }
        let target = scratch ?? UnsafeMutablePointer<UInt>.allocate(capacity: count)
        let counts = UnsafeMutablePointer<Int>.allocate(capacity: 2049)
        defer {
            if scratch == nil { target.deallocate() }
            counts.deallocate()
        }
        var source = addresses
        var destination = target
        for pass in 0..<passes {
            let shift = UInt(6 + 11 * pass)
            counts.initialize(repeating: 0, count: 2049)
            for index in 0..<count { counts[Int(((source[index] &- lowest) >> shift) & 2047) + 1] += 1 }
            for bucket in 0..<2048 { counts[bucket + 1] += counts[bucket] }
            for index in 0..<count {
                let bucket = Int(((source[index] &- lowest) >> shift) & 2047)
                destination[counts[bucket]] = source[index]
                counts[bucket] += 1
            }
            swap(&source, &destination)
        }
        // An odd number of passes ends in the scratch buffer.
        if source != addresses { addresses.update(from: source, count: count) }
    }

    /// Calls `body` with every object. `body` must not change the map (see ``objects``).
    func forEach(_ body: (ManagedObject) throws -> Void) rethrows {
        if let slots, placed > 0 {
            for index in 0...mask where slots[index] != 0 {
                try body(Self.unmanaged(slots[index]).takeUnretainedValue())
            }
        }
        for object in unplaced { try body(object) }
    }

    /// Every object, in no particular order: a copy, which the map's changes leave alone.
    var objects: [ManagedObject] {
        var objects: [ManagedObject] = []
        objects.reserveCapacity(count)
        forEach { objects.append($0) }
        return objects
    }

    /// Makes room for `additional` more objects, at least doubling when it grows, so that
    /// many small calls do not rehash every time.
    func reserve(_ additional: Int) {
        let wanted = count + additional
        guard capacity < wanted else { return }
        grow(to: Swift.max(wanted, capacity * 2))
    }

    /// Starts loading the slots where the permanent ID with `key` (and `salt`,
    /// ``ManagedObjectID/permanentSalt(of:)``) is looked for, so that its probe, some rows
    /// later, finds them in the cache: registering a million fetched rows otherwise waits for
    /// memory at every run of 8 keys, each run's slots being in a random place.
    @inline(__always)
    func prefetchSlots(forKey key: Int64, salt: UInt64) {
        guard let slots else { return }
        postgres_data_prefetch(slots + (KeyRunHashing.hashValue(of: key, salt: salt, seed: seed) & mask))
    }

    /// The slot of the object registered with `id` (`found`), else the empty slot where it
    /// would go; `tag` is the hash bits its slot holds.
    @inline(__always)
    private func probe(_ id: ManagedObjectID, in slots: UnsafeMutablePointer<UInt>) -> (index: Int, tag: UInt, found: Bool) {
        let hash = id._rawHashValue(seed: seed)
        let tag = Self.tag(hash)
        var index = hash & mask
        while true {
            let slot = slots[index]
            if slot == 0 { return (index, tag, false) }
            if slot & 7 == tag, Self.unmanaged(slot).takeUnretainedValue().objectID == id { return (index, tag, true) }
            index = (index + 1) & mask
        }
    }

    /// Gives `count` registered objects new IDs, keeping them registered: `changeAll` calls
    /// the function it is handed with each object and the change of its ID. Many at once (a
    /// save's inserted objects taking their keys) cost one pass over the table rather than a
    /// removal and an insertion each.
    func rekey(count: Int, _ changeAll: (_ rekey: (ManagedObject, () -> Void) -> Void) -> Void) {
        generation &+= 1
        guard count >= 64, count * 4 >= self.count else {
            place()
            changeAll { object, change in
                remove(object.objectID)
                change()
                insert(object)
            }
            return
        }
        changeAll { _, change in change() }
        // The table's objects are placed again under their new IDs; those waiting (a save's
        // new objects, usually) go on waiting, under theirs: new keys are no one else's.
        guard placed > 0 else { return }
        rebuild(size: Swift.max(mask + 1, Self.size(for: placed)))
    }

    private func grow(to wanted: Int) {
        rebuild(size: Self.size(for: wanted))
    }

    /// The slot count that holds `wanted` objects at most three quarters full.
    private static func size(for wanted: Int) -> Int {
        var size = 8
        while size / 4 * 3 < wanted { size *= 2 }
        return size
    }

    /// Places every entry again, under its object's current ID, in a table of `size` slots.
    private func rebuild(size: Int) {
        let (rebuilt, rebuiltIsMapped) = Self.allocateSlots(size)
        if let slots {
            for index in 0...mask where slots[index] != 0 {
                let hash = Self.unmanaged(slots[index]).takeUnretainedValue().objectID._rawHashValue(seed: seed)
                var target = hash & (size - 1)
                while rebuilt[target] != 0 { target = (target + 1) & (size - 1) }
                rebuilt[target] = slots[index] & ~7 | Self.tag(hash)
            }
            Self.deallocateSlots(slots, count: mask + 1, mapped: slotsAreMapped)
        }
        slots = rebuilt
        slotsAreMapped = rebuiltIsMapped
        mask = size - 1
    }

    /// A zeroed table of `count` slots. A large one (2 MiB or more: from about 200,000
    /// objects) is mapped apart from the heap, aligned on 2 MiB, and asks the kernel for huge
    /// pages: its probes land in random places, and with 4 KiB pages nearly each one also
    /// missed the address translation cache (a million objects' table spans 4,096 pages).
    /// Apart from the heap, so that the advice never reaches memory `malloc` reuses, and
    /// unmapped when freed (``deallocateSlots(_:count:mapped:)``).
    private static func allocateSlots(_ count: Int) -> (slots: UnsafeMutablePointer<UInt>, mapped: Bool) {
        #if os(Linux)
        let bytes = count * MemoryLayout<UInt>.stride
        if bytes >= hugePageSize, let mapped = mapAligned(bytes) { return (mapped.bindMemory(to: UInt.self, capacity: count), true) }
        #endif
        let slots = UnsafeMutablePointer<UInt>.allocate(capacity: count)
        slots.initialize(repeating: 0, count: count)
        return (slots, false)
    }

    private static func deallocateSlots(_ slots: UnsafeMutablePointer<UInt>, count: Int, mapped: Bool) {
        #if os(Linux)
        if mapped {
            munmap(slots, count * MemoryLayout<UInt>.stride)
            return
        }
        #endif
        slots.deallocate()
    }

    private static let hugePageSize = 2 << 20

    #if os(Linux)
    /// `bytes` of zeroed memory at a 2 MiB boundary, advised to use huge pages; nil when the
    /// kernel refuses the mapping (the heap is used then).
    private static func mapAligned(_ bytes: Int) -> UnsafeMutableRawPointer? {
        let length = bytes + hugePageSize
        guard let base = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), base != MAP_FAILED else {
            return nil
        }
        let address = UInt(bitPattern: base)
        let aligned = (address + UInt(hugePageSize - 1)) & ~UInt(hugePageSize - 1)
        let head = Int(aligned - address)
        if head > 0 { munmap(base, head) }
        let tail = length - head - bytes
        let start = UnsafeMutableRawPointer(bitPattern: aligned).unsafelyUnwrapped
        if tail > 0 { munmap(start + bytes, tail) }
        _ = madvise(start, bytes, MADV_HUGEPAGE)
        return start
    }
    #endif

    @inline(__always)
    private static func tag(_ hash: Int) -> UInt {
        UInt(bitPattern: hash) >> 61
    }

    @inline(__always)
    private static func slot(_ object: ManagedObject, tag: UInt) -> UInt {
        UInt(bitPattern: Unmanaged.passRetained(object).toOpaque()) | tag
    }

    /// The bit of a slot that ``remove(_:where:_:)`` marks a leaving object's slot with, free
    /// as the tag's are (objects are 16-byte aligned).
    private static let leaving: UInt = 8

    @inline(__always)
    private static func unmanaged(_ slot: UInt) -> Unmanaged<ManagedObject> {
        Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: slot & ~15).unsafelyUnwrapped)
    }
}

extension Hasher {
    /// The hash of two values, as one.
    fileprivate static func hash(_ first: Int, _ second: ObjectIdentifier) -> Int {
        var hasher = Hasher()
        hasher.combine(first)
        hasher.combine(second)
        return hasher.finalize()
    }
}
