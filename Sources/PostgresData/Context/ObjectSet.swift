import Synchronization

/// A context's inserted, updated or deleted objects: found by identity, listed in the order
/// they joined (a save writes them in that order).
///
/// A list with a hole where an object left, and each object's position in a dictionary keyed
/// by its address, hashed with one multiplication: a save of 100,000 new objects then spends
/// no time in a general-purpose ordered dictionary's bit-packed table. Objects known to be
/// new to the set (``appendNew(_:)``, a new object joining the inserted ones) enter the
/// dictionary only when the set is first asked for an object by key: many of them then grow
/// it once, and a save that never asks (the usual one) never hashes them. The inserted set
/// also keeps, by position, the keys a save allocated to its objects before their IDs become
/// permanent (no side object per object). Confined to the context's queue.
struct ObjectSet: ExpressibleByDictionaryLiteral {
    /// An object's address, hashed cheaply: addresses are unique and well spread already.
    private struct Address: Hashable {
        let identifier: ObjectIdentifier

        func hash(into hasher: inout Hasher) { hasher.combine(identifier) }

        func _rawHashValue(seed: Int) -> Int {
            let mixed = UInt64(UInt(bitPattern: identifier) ^ UInt(bitPattern: seed)) &* 0x9E37_79B9_7F4A_7C15
            return Int(truncatingIfNeeded: mixed ^ mixed >> 29)
        }
    }

    typealias Key = ObjectIdentifier
    typealias Value = ManagedObject

    private var list: [ManagedObject?] = []
    private var positions: [Address: Int] = [:]
    /// The objects of `list` from this position on are not in `positions` yet.
    private var indexed = 0
    /// The key allocated to the object at each position of `list` (0: none), for the inserted
    /// objects of a save that draws their keys before writing them; as long as `list` or
    /// shorter (the positions past its end have none), empty until the first key.
    private var allocatedKeys: [Int64] = []
    /// Which set this is: every set made has its own (see ``membership``).
    private let origin = ObjectSet.origins.add(1, ordering: .relaxed).newValue
    private static let origins = Atomic<Int>(0)

    init(dictionaryLiteral elements: (ObjectIdentifier, ManagedObject)...) {
        for (key, object) in elements { self[key] = object }
    }

    var count: Int { positions.count + list.count - indexed }
    var isEmpty: Bool { count == 0 }

    /// What changes whenever the set's members may have: an object joining moves the end
    /// position, one leaving lowers the count (or, closing the holes, the end position), and
    /// a set made anew, even with the same objects, has an origin of its own.
    var membership: Membership { Membership(origin: origin, count: count, endPosition: list.count) }

    struct Membership: Equatable {
        fileprivate let origin: Int
        fileprivate let count: Int
        fileprivate let endPosition: Int
    }

    /// The objects, in the order they joined; a view of the set as it is now.
    var values: Values { Values(list: list, count: count) }

    /// The object at `position` of the order objects joined in (nil where one left, or past
    /// the end).
    func object(at position: Int) -> ManagedObject? {
        position < list.count ? list[position] : nil
    }

    /// The ID of the object at `position` (nil where one left, or past the end), read in
    /// place: a pass over a save's inserted objects costs no retain of each.
    func objectID(at position: Int) -> ManagedObjectID? {
        guard position < list.count else { return nil }
        return list.withUnsafeBufferPointer { $0[position]?.objectID }
    }

    /// One past the last position (positions of removed objects included).
    var endPosition: Int { list.count }

    /// The objects by position, nil where one left: the set's own list, shared.
    var slots: [ManagedObject?] { list }

    /// Calls `body` with each object and its position, in the order they joined.
    func forEachPosition(_ body: (Int, ManagedObject) throws -> Void) rethrows {
        for (position, object) in list.enumerated() {
            if let object { try body(position, object) }
        }
    }

    /// Calls `body` with each object, in the order they joined, borrowed (no retain and
    /// release of each): the objects as they were when the call began, which its own
    /// reference to the list keeps alive should `body` change the set.
    func forEachBorrowed(_ body: (ManagedObject) throws -> Void) rethrows {
        try forEachBorrowed(at: nil) { _, object in try body(object) }
    }

    /// Calls `body` with the position and the object, borrowed, of each object at `positions`
    /// (every object when nil, in the order they joined), as ``forEachBorrowed(_:)`` does.
    func forEachBorrowed(at positions: [Int]?, _ body: (Int, ManagedObject) throws -> Void) rethrows {
        let list = self.list
        try list.withUnsafeBufferPointer { slots in
            guard let positions else {
                return try ManagedObject.forEachBorrowed(in: UnsafeRawBufferPointer(slots), body)
            }
            for position in positions where slots.indices.contains(position) {
                guard let object = slots[position] else { continue }
                try body(position, object)
            }
        }
    }

    /// The position of `object`, if it is in the set.
    mutating func position(of object: ManagedObject) -> Int? {
        indexAppended()
        return positions[Address(identifier: ObjectIdentifier(object))]
    }

    /// The key allocated to the object at `position` (0: none).
    func allocatedKey(at position: Int) -> Int64 {
        position < allocatedKeys.count ? allocatedKeys[position] : 0
    }

    mutating func setAllocatedKey(_ key: Int64, at position: Int) {
        if position >= allocatedKeys.count {
            guard key != 0 else { return }
            allocatedKeys.append(contentsOf: repeatElement(0, count: list.count - allocatedKeys.count))
        }
        allocatedKeys[position] = key
    }

    /// Adds an object that is not in the set (the caller knows it), without hashing it now.
    mutating func appendNew(_ object: ManagedObject) {
        list.append(object)
    }

    /// Enters the objects appended by ``appendNew(_:)`` in the dictionary, growing it once.
    private mutating func indexAppended() {
        guard indexed < list.count else { return }
        positions.reserveCapacity(positions.count + list.count - indexed)
        for position in indexed..<list.count {
            if let object = list[position] { positions[Address(identifier: ObjectIdentifier(object))] = position }
        }
        indexed = list.count
    }

    /// The objects of an ``ObjectSet``, in the order they joined, read without a copy.
    struct Values: Sequence {
        fileprivate let list: [ManagedObject?]
        fileprivate let count: Int

        var underestimatedCount: Int { count }

        func makeIterator() -> Iterator { Iterator(slots: list.makeIterator()) }

        struct Iterator: IteratorProtocol {
            fileprivate var slots: IndexingIterator<[ManagedObject?]>

            mutating func next() -> ManagedObject? {
                while let slot = slots.next() {
                    if let object = slot { return object }
                }
                return nil
            }
        }
    }

    subscript(key: ObjectIdentifier) -> ManagedObject? {
        mutating get {
            indexAppended()
            return positions[Address(identifier: key)].flatMap { list[$0] }
        }
        set {
            guard let newValue else {
                removeValue(forKey: key)
                return
            }
            indexAppended()
            // One probe: the position is read, or the next one inserted, in place.
            let next = list.count
            let position = Self.value(of: &positions[Address(identifier: key), default: next])
            if position == next {
                list.append(newValue)
                indexed = list.count
            } else {
                list[position] = newValue
            }
        }
    }

    private static func value(of position: inout Int) -> Int { position }

    /// Removes the object with `key`; returns it, if it was there.
    @discardableResult
    mutating func removeValue(forKey key: ObjectIdentifier) -> ManagedObject? {
        indexAppended()
        guard let position = positions.removeValue(forKey: Address(identifier: key)) else { return nil }
        let object = list[position]
        list[position] = nil
        setAllocatedKey(0, at: position)
        if positions.isEmpty {
            list.removeAll(keepingCapacity: true)
            allocatedKeys.removeAll()
            indexed = 0
        } else if list.count >= 64 && positions.count * 2 < list.count {
            compact()
        }
        return object
    }

    /// Closes the holes, keeping the order.
    private mutating func compact() {
        if !allocatedKeys.isEmpty {
            allocatedKeys = list.indices.compactMap { list[$0] == nil ? nil : allocatedKey(at: $0) }
        }
        list = list.filter { $0 != nil }
        for (position, object) in list.enumerated() {
            if let object { positions[Address(identifier: ObjectIdentifier(object))] = position }
        }
        indexed = list.count
    }
}
