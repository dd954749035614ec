import PostgresClient

extension ManagedObjectContext {
    /// Starts an asynchronous fetch and returns at once; call it on the context's queue.
    ///
    /// Core Data equivalent: `execute(_:)` with an `NSAsynchronousFetchRequest`. The rows come
    /// through a server-side cursor, `fetchBatchSize` at a time; each batch is registered in
    /// this context by a block of its own on the context's queue, so other `perform` blocks
    /// run between batches and the context can be edited meanwhile. Unsaved changes are
    /// reflected in the final result as in ``fetch(_:)-68p1z``, judged when the fetch starts.
    public func execute<Result>(_ request: AsynchronousFetchRequest<Result>) throws -> AsynchronousFetchResult<Result> {
        assertOnQueue()
        let fetch = try CursorFetch(request.fetchRequest, in: self)
        let result = AsynchronousFetchResult(fetchRequest: request.fetchRequest, context: self)
        let coordinator = persistentStoreCoordinator
        let collected = CollectedObjects()
        let access = makeStoreAccess(readsFromReplica: fetch.fromReplica)
        let entity = coordinator.managedObjectModel.entitiesByName[request.fetchRequest.entityName]
        asynchronousFetchesInFlight += 1
        let task = Task {
            do {
                // Without an estimate asked for, the planner's is still read, to size the maps.
                let reported = request.resultCountEstimate != .none
                try await StoreOperation.asynchronousFetch.traced(entity: entity, store: try? coordinator.loaded()) { span in
                    span.noteQuery(fetch.sql)
                    try await coordinator.cursorFetch(
                        sql: fetch.sql, bindings: fetch.bindings, batchSize: request.batchSize,
                        estimate: reported ? request.resultCountEstimate : .plannerEstimate, overlapping: true, decode: fetch.decode(in: coordinator),
                        estimated: { count in
                            await self.perform {
                                if reported { result.setEstimate(count) }
                                collected.estimate = count
                            }
                        },
                        deliver: { batch in
                            await self.perform {
                                // A cancelled fetch delivers nothing: the batch is not worth registering.
                                guard !result.isCancelRequested else { return }
                                let seen = collected.objects.count
                                // Its first batch into an empty map claims it: the next batches
                                // enter it unlooked-up, while no one else registers objects.
                                if seen == 0 { collected.claim = self.registered.claimIfEmpty() }
                                fetch.reserve(for: batch, seen: seen, estimate: collected.estimate, claim: collected.claim, in: self)
                                if seen == 0, let estimate = collected.estimate, batch.count < estimate {
                                    collected.objects.reserveCapacity(min(estimate, 128 * batch.count))
                                }
                                fetch.register(batch, in: self, claim: &collected.claim, appendingTo: &collected.objects)
                                let update = result.advance(by: collected.objects.count - seen)
                                request.progressHandler?(update)
                            }
                        },
                        access: access)
                    try Task.checkCancellation()
                    let rows = await self.perform { collected.objects.count }
                    if span.isRecording { span.attributes["db.response.returned_rows"] = rows }
                    if let entity { (try? coordinator.loaded())?.metrics.recordReturnedRows(rows, collection: entity.tableName) }
                }
                await self.perform {
                    self.asynchronousFetchesInFlight -= 1
                    let outcome = Swift.Result { try fetch.finalResults(collected.objects, in: self) as [Result] }
                    collected.objects = []
                    result.finish(outcome) { update in
                        if case .success = outcome { request.progressHandler?(update) }
                        request.completionBlock?(result)
                    }
                }
            } catch {
                let failure = Self.cancellationAware(error)
                await self.perform {
                    self.asynchronousFetchesInFlight -= 1
                    collected.objects = []
                    result.finish(.failure(failure)) { _ in request.completionBlock?(result) }
                }
            }
        }
        result.attach(task)
        return result
    }

    /// Walks the results of `request` batch by batch through a server-side cursor, with
    /// back-pressure: the server reads the next batch while `body` runs, and the one after
    /// only once `body` has returned, so memory holds two batches whatever the size of the
    /// result.
    ///
    /// `body` runs on the context's queue with each batch's objects (or IDs). With
    /// `releasingObjects` (the default), the batch's objects that have no unsaved changes
    /// leave the context after `body`, so an export of 10,000,000 rows runs in constant
    /// memory: keep IDs, not objects, beyond the block. Cancelling the calling task cancels
    /// the statement on the server. Unsaved changes of the context are not merged in.
    ///
    /// No Core Data equivalent: Core Data's batched fetches keep every row's ID and every
    /// touched object.
    public func enumerateBatches<Result>(
        of request: FetchRequest<Result>, releasingObjects: Bool = true,
        _ body: @escaping @Sendable ([Result]) throws -> Void
    ) async throws {
        var unmerged = request
        unmerged.includesPendingChanges = false
        let storeRequest = unmerged
        let (fetch, access) = try await perform { () throws in
            let fetch = try CursorFetch(storeRequest, in: self)
            return (fetch, self.makeStoreAccess(readsFromReplica: fetch.fromReplica))
        }
        let batchSize = request.fetchBatchSize > 0 ? request.fetchBatchSize : AsynchronousFetchRequest<Result>.defaultBatchSize
        do {
            let coordinator = persistentStoreCoordinator
            try await coordinator.cursorFetch(
                sql: fetch.sql, bindings: fetch.bindings, batchSize: batchSize, estimate: .none, overlapping: false,
                decode: fetch.decode(in: coordinator), estimated: { _ in },
                deliver: { batch in
                    try await self.perform { () throws in
                        let objects = fetch.register(batch, in: self)
                        defer { if releasingObjects { self.unregister(objects) } }
                        try body(try fetch.finalResults(objects, in: self))
                    }
                },
                access: access)
        } catch {
            throw Self.cancellationAware(error)
        }
    }

    /// Takes objects without unsaved changes out of the context (their row-cache references
    /// go too): a long walk through a result holds only the current batch, a fetched-results
    /// controller keeps only the objects it shows.
    func unregister(_ objects: [ManagedObject]) {
        var released: [ManagedObjectID] = []
        registered.remove(objects, where: { !$0.hasChanges }) { object in
            if object.holdsCacheReference {
                object.holdsCacheReference = false
                released.append(object.objectID)
            }
            object.faultingBatch = nil
            if object.isFaultStorage { object.pendingRow = nil }
            object.managedObjectContext = nil
        }
        if !released.isEmpty { persistentStoreCoordinator.releaseCachedRows(released) }
    }

    /// A cancelled task's error as a database cancellation (SQLSTATE 57014), whichever
    /// point of the fetch it reached.
    static func cancellationAware(_ error: any Error) -> any Error {
        guard error is CancellationError else { return error }
        return PostgresDataError.database(PostgresError(.canceled, message: "the fetch was canceled", sqlState: .queryCanceled))
    }
}

/// Objects registered by the batches of an asynchronous fetch; touched on the context's
/// queue only.
private final class CollectedObjects: @unchecked Sendable {
    var objects: [ManagedObject] = []
    /// The planner's estimate of the result's size.
    var estimate: Int?
    /// The fetch's claim on the context's identity map, while it holds.
    var claim: IdentityMap.Claim?
}
