import PostgresClient

/// The coordinator's cache of row snapshots, shared by its contexts.
///
/// Core Data keeps the same cache in its coordinator: a fault in any context is filled from
/// it without a query when another context has the row. Entries live while some context
/// holds an object of the row (one reference per context), and saves replace them with
/// the new values and version.
final class RowCache: Sendable {
    private struct Entry {
        var snapshot: RowSnapshot
        var references: Int
    }

    private let entries = Locked<[ManagedObjectID: Entry]>([:])

    func snapshot(for id: ManagedObjectID) -> RowSnapshot? {
        entries.withLock { $0[id]?.snapshot }
    }

    /// The cached snapshots of `ids` (nil where there is none), in one lock.
    func snapshots(for ids: [ManagedObjectID]) -> [RowSnapshot?] {
        entries.withLock { entries in ids.map { entries[$0]?.snapshot } }
    }

    /// Adds references for objects that now hold these snapshots; a newer version replaces
    /// the cached one.
    func retain(_ pairs: some Sequence<(ManagedObjectID, RowSnapshot)>) {
        entries.withLock { entries in
            for (id, snapshot) in pairs {
                if var entry = entries[id] {
                    entry.references += 1
                    if entry.snapshot.version != snapshot.version { entry.snapshot = snapshot }
                    entries[id] = entry
                } else {
                    entries[id] = Entry(snapshot: snapshot, references: 1)
                }
            }
        }
    }

    /// Replaces cached snapshots after a save, without adding references.
    func update(_ pairs: some Sequence<(ManagedObjectID, RowSnapshot)>) {
        entries.withLock { entries in
            for (id, snapshot) in pairs { entries[id]?.snapshot = snapshot }
        }
    }

    func release(_ ids: some Sequence<ManagedObjectID>) {
        entries.withLock { entries in
            for id in ids {
                guard var entry = entries[id] else { continue }
                entry.references -= 1
                if entry.references <= 0 { entries[id] = nil } else { entries[id] = entry }
            }
        }
    }

    /// Forgets rows that were deleted.
    func remove(_ ids: some Sequence<ManagedObjectID>) {
        entries.withLock { entries in
            for id in ids { entries[id] = nil }
        }
    }

    var count: Int { entries.withLock { $0.count } }
}
