import PostgresClient

/// The statement of a cursor fetch and how its rows become results, planned on the
/// context's queue when the fetch starts.
struct CursorFetch<Result>: @unchecked Sendable {
    /// Decoded rows of one `FETCH`: keys, keys with snapshots, or, for faults, the rows
    /// kept encoded.
    enum Batch: Sendable {
        case keys([Int64])
        case rows(SnapshotBatch)
        case encoded(EncodedBatch)

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
    /// The rows stay out of the row cache: from the replica, or from a pinned snapshot.
    let outsideRowCache: Bool
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
        outsideRowCache = fromReplica || context.queryGeneration != nil
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
        let reader = request.returnsObjectsAsFaults && !outsideRowCache && !idsOnly ? coordinator.beginReadingCachedRows() : nil
        return { result in
            if idsOnly { return .keys(try result.map { try $0.decode(Int64.self, at: 0) }) }
            let decoder = SnapshotDecoder(entity: entity, result: result)
            if let reader, let rows = try EncodedRows.batch(of: result, decoder: decoder, reader: reader) { return .encoded(rows) }
            return .rows(try decoder.batch(of: result, rows: 0..<result.count))
        }
    }

    /// Makes room in the identity map (and the row cache, for faults) at the first batch of a
    /// large result, so that they do not grow by doubling, rehashing everything each time:
    /// for the planner's estimate, but never more than a multiple of the first batch's rows
    /// (an estimate can be far off). Later batches leave them to grow by doubling, should the
    /// rows outnumber the room made.
    ///
    /// The context's map takes up to 128 times the first batch: a million rows in batches of
    /// 10,000 then fill one table, made at the first batch, where 16 times made four, each
    /// zeroed and rehashed on the context's queue while the next batch waited (35–60 ms of a
    /// 600 ms fetch). Growing toward the estimate at every batch made as many for an estimate
    /// ten times the rows, which the planner gives for a table whose rows were each updated
    /// ten times since the last vacuum. When the estimate is that far off, the table has room
    /// for at most 128 objects per row of the first batch (slots of 8 bytes, at most
    /// three-quarters full, their number rounded up to a power of two). The row cache, shared
    /// and never shrinking, takes 16 times at most. Under a `claim` (``IdentityMap/Claim``),
    /// the room is made in the map's list of objects waiting to be placed instead.
    func reserve(for batch: Batch, seen: Int, estimate: Int?, claim: IdentityMap.Claim?, in context: ManagedObjectContext) {
        let count = batch.count
        guard seen == 0, let estimate, count < estimate else { return }
        context.registered.reserve(min(estimate, 128 * count), under: claim)
        if case .rows = batch, request.returnsObjectsAsFaults, !outsideRowCache {
            // Faults whose rows could not stay encoded share them through the row cache.
            context.persistentStoreCoordinator.reserveCachedRows(min(estimate, 16 * count), for: entity)
        }
    }

    /// Registers a batch in the context (on its queue); its objects, in the store's order.
    func register(_ batch: Batch, in context: ManagedObjectContext) -> [ManagedObject] {
        var objects: [ManagedObject] = []
        var claim: IdentityMap.Claim?
        register(batch, in: context, claim: &claim, appendingTo: &objects)
        return objects
    }

    /// ``register(_:in:)``, appending the objects to `objects`: the batches of an
    /// asynchronous fetch enter its result directly, not through an array per batch (a
    /// retain, a release and a copy per object).
    /// Under `claim` while it holds (``IdentityMap/Claim``), faults kept encoded enter the
    /// identity map without a lookup each.
    func register(_ batch: Batch, in context: ManagedObjectContext, claim: inout IdentityMap.Claim?, appendingTo objects: inout [ManagedObject]) {
        switch batch {
        case .keys(let keys):
            if objects.capacity < objects.count + keys.count { objects.reserveCapacity(max(objects.count + keys.count, 2 * objects.capacity)) }
            for key in keys { objects.append(context.object(with: ManagedObjectID(entity: entity, primaryKey: key))) }
        case .rows(let rows):
            context.register(rows, entity: entity, asFaults: request.returnsObjectsAsFaults,
                             sharesRows: request.returnsObjectsAsFaults, fromReplica: outsideRowCache, appendingTo: &objects)
        case .encoded(let rows):
            context.registerFaults(rows, entity: entity, claim: &claim, appendingTo: &objects)
        }
    }

    /// The results: the store's objects with the pending ones merged in, as `Result`s.
    func finalResults(_ objects: [ManagedObject], in context: ManagedObjectContext) throws -> [Result] {
        let merged = try context.merging(pending, into: objects, for: request)
        if Result.self == ManagedObjectID.self { return unsafeBitCast(merged.map(\.objectID), to: [Result].self) }
        return unsafeBitCast(merged, to: [Result].self)
    }
}
