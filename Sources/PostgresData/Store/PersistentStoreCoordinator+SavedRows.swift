import PostgresClient

/// What a save changes in the row cache: the coordinator owns the cache, contexts say what
/// happened.
extension PersistentStoreCoordinator {
    /// Rows a save found changed underneath: the rows as they are now replace the cached ones
    /// (a nil row: deleted), so that the next reader starts from them.
    func noteCurrentRows(_ rows: [(ManagedObjectID, RowSnapshot?)]) {
        rowCache.update(rows.compactMap { id, row in row.map { (id, $0) } })
        rowCache.remove(rows.filter { $0.1 == nil }.map(\.0))
    }

    /// Rows a save committed: `retained` now referenced by the saving context, `refreshed`
    /// already referenced, `deleted` gone.
    func noteCommittedRows(retained: [(ManagedObjectID, RowSnapshot)], refreshed: [(ManagedObjectID, RowSnapshot)],
                           deleted: [ManagedObjectID]) {
        rowCache.retain(retained)
        rowCache.update(refreshed)
        rowCache.remove(deleted)
    }
}
