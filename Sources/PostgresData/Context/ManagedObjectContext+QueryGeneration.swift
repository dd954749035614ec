/// Query generations: a context's reads pinned to one snapshot of the database.
extension ManagedObjectContext {
    /// The generation this context is pinned to, to share with other contexts; nil when its
    /// reads see the newest committed data (the default). Call it on the context's queue.
    ///
    /// Core Data equivalent: the property of the same name.
    public var queryGenerationToken: QueryGenerationToken? {
        assertOnQueue()
        return queryGeneration.map { QueryGenerationToken(generation: $0) }
    }

    /// Pins this context's reads to a snapshot: ``QueryGenerationToken/current`` for the
    /// database as it is at the context's next read, another context's
    /// ``queryGenerationToken`` for that context's snapshot, nil to unpin. Call it on the
    /// context's queue.
    ///
    /// Every read of a pinned context — fetches, faults, counts, prefetches, batched faults,
    /// fetched properties, asynchronous fetches — sees that snapshot, and none of them fills
    /// from (or fills) the coordinator's row cache, which other contexts keep current. The
    /// context moves to a new generation (lazily, at its next read) when it saves, is reset,
    /// refreshes all its objects or merges changes, as in Core Data. Its saves write to the
    /// database as it is now: an object whose row changed after the snapshot is a conflict,
    /// which the ``mergePolicy`` resolves as for any context.
    ///
    /// Throws ``PostgresDataError/storeNotLoaded``, ``PostgresDataError/invalidRequest(_:)`` for
    /// a token of another store, and ``PostgresDataError/queryGenerationEnded(_:)`` for a
    /// generation that can no longer be read.
    ///
    /// Core Data equivalent: `setQueryGenerationFrom(_:)`. A generation holds one pooled
    /// connection from its first read until no context or token names it any more; see
    /// <doc:Concurrency#Query-generations>.
    public func setQueryGenerationFrom(_ token: QueryGenerationToken?) throws {
        assertOnQueue()
        guard let token else {
            queryGeneration = nil
            return
        }
        let coordinator = persistentStoreCoordinator
        let pool = try coordinator.loaded().pool
        guard let generation = token.generation else {
            pin(QueryGeneration(pool: pool, registry: coordinator.generations))
            return
        }
        guard generation.belongs(to: pool) else {
            throw PostgresDataError.invalidRequest("\(token) belongs to another store than \(self)'s; pin the context with .current or a token of a context of the same coordinator")
        }
        if let error = generation.endError { throw error }
        pin(generation)
    }

    /// A pinned context moves to the generation current at its next read (after a save, a
    /// reset, a refresh of all objects or a merge); an unpinned one stays unpinned.
    func advanceQueryGeneration() {
        guard queryGeneration != nil, let pool = try? persistentStoreCoordinator.loaded().pool else { return }
        queryGeneration = QueryGeneration(pool: pool, registry: persistentStoreCoordinator.generations)
    }

    private func pin(_ generation: QueryGeneration) {
        if queryGeneration == nil {
            // Rows that faults kept (an asynchronous fetch's) were read before the snapshot.
            registered.forEach { object in
                if object.isFaultStorage { object.pendingRow = nil }
            }
        }
        queryGeneration = generation
    }
}
