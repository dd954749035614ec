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
                                fetch.reserve(for: batch, seen: collected.objects.count, estimate: collected.estimate, in: self)
                                let objects = fetch.register(batch, in: self)
                                collected.objects.append(contentsOf: objects)
                                let update = result.advance(by: objects.count)
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
                    collected.objects = []
                    result.finish(.failure(failure)) { _ in request.completionBlock?(result) }
                }
            }
        }
        result.attach(task)
        return result
    }

    /// Walks the results of `request` batch by batch through a server-side cursor, with
    /// back-pressure: the next `FETCH` is sent only when `body` has returned, so memory holds
    /// one batch whatever the size of the result.
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
        for object in objects where !object.hasChanges && registered.remove(object) {
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
}

/// The statement of a cursor fetch and how its rows become results, planned on the
/// context's queue when the fetch starts.
struct CursorFetch<Result>: @unchecked Sendable {
    /// Decoded rows of one `FETCH`: keys, keys with snapshots, or, for faults, the rows
    /// kept encoded.
    enum Batch: Sendable {
        case keys([Int64])
        case rows([(Int64, RowSnapshot)])
        case encoded(EncodedRows)

        var count: Int {
            switch self {
            case .keys(let keys): keys.count
            case .rows(let rows): rows.count
            case .encoded(let rows): rows.count
            }
        }
    }

    let entity: EntityDescription
    let request: FetchRequest<Result>
    let idsOnly: Bool
    /// The rows come from the read replica (a read-only context, or a request allowing it).
    let fromReplica: Bool
    let sql: String
    let bindings: PostgresBindings
    // Context objects: read on the context's queue only.
    private let pending: ManagedObjectContext.PendingObjects

    init(_ request: FetchRequest<Result>, in context: ManagedObjectContext) throws {
        let entity = try context.entity(named: request.entityName)
        switch request.resultType {
        case .managedObject where entity.managedObjectClass is Result.Type || Result.self == ManagedObject.self:
            idsOnly = !request.includesPropertyValues
        case .managedObjectID where Result.self == ManagedObjectID.self:
            idsOnly = true
        default:
            throw PostgresDataError.invalidRequest("an asynchronous or batched fetch returns objects or object IDs of \(entity.name), not \(Result.self) (\(request.resultType)); use fetch(_:) for dictionaries and counts")
        }
        self.entity = entity
        self.request = request
        fromReplica = context.isReadOnly || request.allowsReadingFromReplica
        pending = request.includesPendingChanges ? try context.pendingObjects(of: entity, matching: request.predicate)
            : ManagedObjectContext.PendingObjects()
        let storeRequest = ManagedObjectContext.storeRequest(request, pending: pending)
        let columns = idsOnly ? "t.\"id\"" : PersistentStoreCoordinator.selectList(entity)
        (sql, bindings) = try storeRequest.sql(for: entity, columns: columns, excluding: pending.excludedKeys)
    }

    /// Decodes one `FETCH`'s rows, off the context. Take it when the fetch starts: for
    /// faults, it begins the row cache's reader their rows depend on.
    func decode(in coordinator: PersistentStoreCoordinator) -> @Sendable (QueryResult) throws -> Batch {
        let entity = entity
        let idsOnly = idsOnly
        // Faults keep their rows, undecoded until they fire.
        let reader = request.returnsObjectsAsFaults && !fromReplica && !idsOnly ? coordinator.beginReadingCachedRows() : nil
        return { result in
            if idsOnly { return .keys(try result.map { try $0.decode(Int64.self, at: 0) }) }
            let decoder = SnapshotDecoder(entity: entity, result: result)
            if let reader, let rows = try EncodedRows(result, decoder: decoder, reader: reader) { return .encoded(rows) }
            return .rows(try decoder.snapshots(of: result, rows: 0..<result.count))
        }
    }

    /// Makes room in the identity map (and the row cache, for faults) before a full batch of
    /// a large result, so that they do not grow by doubling, rehashing everything each time:
    /// for the planner's estimate, but never more than 16 times the rows seen so far (an
    /// estimate can be far off).
    func reserve(for batch: Batch, seen: Int, estimate: Int?, in context: ManagedObjectContext) {
        let count = batch.count
        guard let estimate, seen + count < estimate else { return }
        let wanted = min(estimate, 16 * (seen + count))
        guard context.registered.capacity < context.registered.count + wanted - seen else { return }
        context.registered.reserve(wanted - seen)
        if case .rows = batch, request.returnsObjectsAsFaults, !fromReplica {
            // Faults whose rows could not stay encoded share them through the row cache.
            context.persistentStoreCoordinator.reserveCachedRows(wanted - seen, for: entity)
        }
    }

    /// Registers a batch in the context (on its queue); its objects, in the store's order.
    func register(_ batch: Batch, in context: ManagedObjectContext) -> [ManagedObject] {
        switch batch {
        case .keys(let keys):
            return keys.map { context.object(with: ManagedObjectID(entity: entity, primaryKey: $0)) }
        case .rows(let rows):
            return context.register(rows, entity: entity, asFaults: request.returnsObjectsAsFaults,
                                    sharesRows: request.returnsObjectsAsFaults, fromReplica: fromReplica)
        case .encoded(let rows):
            return context.registerFaults(rows, entity: entity)
        }
    }

    /// The results: the store's objects with the pending ones merged in, as `Result`s.
    func finalResults(_ objects: [ManagedObject], in context: ManagedObjectContext) throws -> [Result] {
        let merged = try context.merging(pending, into: objects, for: request)
        if Result.self == ManagedObjectID.self { return unsafeBitCast(merged.map(\.objectID), to: [Result].self) }
        return unsafeBitCast(merged, to: [Result].self)
    }
}
