import PostgresClient

/// The coordinator's cache of row snapshots, shared by its contexts.
///
/// Core Data keeps the same cache in its coordinator: a fault in any context is filled from
/// it without a query when another context has the row. Entries live while some context
/// holds an object of the row (one reference per context), and saves replace them with
/// the new values and version. Rows are kept per entity by primary key: a fetch of a
/// million rows then costs a million integer-keyed inserts, with no reference counting
/// of keys.
final class RowCache: Sendable {
    private struct Entry {
        var snapshot: RowSnapshot
        var references: Int

        mutating func retain(_ newer: RowSnapshot) {
            references += 1
            if snapshot.version != newer.version { snapshot = newer }
        }
    }

    /// A primary key, hashed so that runs of keys take runs of buckets (``KeyRunHashing``).
    private struct Key: Hashable {
        let value: Int64

        init(_ value: Int64) { self.value = value }

        func hash(into hasher: inout Hasher) { hasher.combine(value) }
        func _rawHashValue(seed: Int) -> Int { KeyRunHashing.hashValue(of: value, salt: 0, seed: seed) }
    }

    /// Indexed by the entity's index in the model.
    private let entries = Locked<[[Key: Entry]]>([])

    func snapshot(for id: ManagedObjectID) -> RowSnapshot? {
        guard let key = id.primaryKey else { return nil }
        let index = id.entity.modelIndex
        return entries.withLock { $0.indices.contains(index) ? $0[index][Key(key)]?.snapshot : nil }
    }

    /// The cached snapshots of `ids` (nil where there is none), in one lock.
    func snapshots(for ids: [ManagedObjectID]) -> [RowSnapshot?] {
        entries.withLock { entries in
            ids.map { id in
                guard let key = id.primaryKey, entries.indices.contains(id.entity.modelIndex) else { return nil }
                return entries[id.entity.modelIndex][Key(key)]?.snapshot
            }
        }
    }

    /// Adds references for objects that now hold these snapshots; a newer version replaces
    /// the cached one.
    func retain(_ pairs: some Sequence<(ManagedObjectID, RowSnapshot)>) {
        entries.withLock { entries in
            var reserved = -1
            for (id, snapshot) in pairs {
                guard let key = id.primaryKey else { continue }
                let index = id.entity.modelIndex
                if index != reserved {
                    while entries.count <= index { entries.append([:]) }
                    entries[index].reserve(pairs.underestimatedCount)
                    reserved = index
                }
                // One hash lookup per row: the entry is modified in place.
                entries[index][Key(key), default: Entry(snapshot: snapshot, references: 0)].retain(snapshot)
            }
        }
    }

    /// Makes room for `additional` more rows of `entity` (a large fetch about to arrive).
    func reserve(_ additional: Int, for entity: EntityDescription) {
        entries.withLock { entries in
            while entries.count <= entity.modelIndex { entries.append([:]) }
            entries[entity.modelIndex].reserve(additional)
        }
    }

    /// Replaces cached snapshots after a save, without adding references.
    func update(_ pairs: some Sequence<(ManagedObjectID, RowSnapshot)>) {
        entries.withLock { entries in
            for (id, snapshot) in pairs {
                guard let key = id.primaryKey, entries.indices.contains(id.entity.modelIndex) else { continue }
                entries[id.entity.modelIndex][Key(key)]?.snapshot = snapshot
            }
        }
    }

    /// Replaces an encoded snapshot by the same row decoded (a fault fired); a newer version
    /// cached meanwhile stays.
    func replaceEncoded(_ id: ManagedObjectID, with decoded: RowSnapshot) {
        guard let key = id.primaryKey else { return }
        entries.withLock { entries in
            guard entries.indices.contains(id.entity.modelIndex),
                  let cached = entries[id.entity.modelIndex][Key(key)]?.snapshot,
                  cached.isEncoded, cached.version == decoded.version else { return }
            entries[id.entity.modelIndex][Key(key)]!.snapshot = decoded
        }
    }

    func release(_ ids: some Sequence<ManagedObjectID>) {
        entries.withLock { entries in
            for id in ids {
                guard let key = id.primaryKey, entries.indices.contains(id.entity.modelIndex) else { continue }
                let index = id.entity.modelIndex
                guard let references = entries[index][Key(key)]?.references else { continue }
                if references <= 1 {
                    entries[index][Key(key)] = nil
                } else {
                    entries[index][Key(key)]!.references = references - 1
                }
            }
        }
    }

    /// Forgets rows that were deleted.
    func remove(_ ids: some Sequence<ManagedObjectID>) {
        entries.withLock { entries in
            for id in ids {
                guard let key = id.primaryKey, entries.indices.contains(id.entity.modelIndex) else { continue }
                entries[id.entity.modelIndex][Key(key)] = nil
            }
        }
    }

    var count: Int { entries.withLock { $0.reduce(0) { $0 + $1.count } } }
}

extension Dictionary {
    /// Makes room for `additional` more entries, at least doubling when it grows, so that
    /// many small calls do not resize every time.
    mutating func reserve(_ additional: Int) {
        guard capacity - count < additional else { return }
        reserveCapacity(Swift.max(count + additional, capacity * 2))
    }
}
