import OrderedCollections
import PostgresClient

extension ManagedObjectContext {
    /// Runs a fetch request: objects (registered in this context; objects already registered
    /// keep their unsaved changes), object IDs, dictionaries, or a count (`[Int]`).
    ///
    /// Core Data equivalent: `fetch(_:)`. With ``FetchRequest/includesPendingChanges`` (the
    /// default) the context's unsaved inserts, updates and deletes are reflected: the store
    /// is asked for the rows other than the changed ones, and the changed objects are judged
    /// in memory with the same predicate and merged in sort order.
    ///
    /// This form blocks the context's thread while the database works; in async code, use
    /// ``fetch(_:)``, which suspends instead.
    public func fetch<Result>(_ request: FetchRequest<Result>) throws -> [Result] {
        assertOnQueue()
        return try BlockingBridge.run { try await self.fetch(request) }
    }

    /// Runs a fetch request as ``fetch(_:)`` does, suspending the
    /// calling task instead of blocking a thread while the database works; call it inside
    /// ``perform(_:)-(()->T)``.
    ///
    /// Core Data equivalent: `fetch(_:)`.
    public func fetch<Result>(_ request: FetchRequest<Result>) async throws -> [Result] {
        assertOnQueue()
        let entity = persistentStoreCoordinator.managedObjectModel.entitiesByName[request.entityName]
        return try await traced(.fetch, entity: entity) {
            let results = try await readingFromReplica(request.allowsReadingFromReplica) { try await fetchFromStore(request) }
            if let entity, request.resultType != .count { noteReturnedRows(results.count, entity: entity) }
            return results
        }
    }

    private func fetchFromStore<Result>(_ request: FetchRequest<Result>) async throws -> [Result] {
        let entity = try entity(named: request.entityName)
        // Each result type is checked once, not element by element.
        switch request.resultType {
        case .count:
            if let counts = [try await count(for: request)] as? [Result] { return counts }
        case .dictionary:
            if Result.self == FetchedDictionary.self || Result.self == [String: AttributeValue].self {
                return try await fetchDictionaries(request, entity: entity)
            }
        case .managedObjectID:
            if let ids = try await fetchIDs(request, entity: entity) as? [Result] { return ids }
        case .managedObject:
            if entity.managedObjectClass is Result.Type || Result.self == ManagedObject.self {
                // Every object of the entity is an instance of its class (checked once, not per
                // object: `init(entity:insertInto:)` refuses objects of another class).
                return unsafeBitCast(try await fetchObjects(request, entity: entity, idsOnly: false), to: [Result].self)
            }
        }
        let natural = switch request.resultType {
        case .count: "Int"
        case .dictionary: "FetchedDictionary or [String: AttributeValue]"
        case .managedObjectID: "ManagedObjectID"
        case .managedObject: "\(entity.managedObjectClass)"
        }
        throw PostgresDataError.invalidRequest("a \(request.resultType) fetch of \(entity.name) returns \(natural), not \(Result.self)")
    }

    /// The number of objects a request would return, unsaved changes included (unless the
    /// request says otherwise).
    ///
    /// Core Data equivalent: `count(for:)`.
    public func count<Result>(for request: FetchRequest<Result>) throws -> Int {
        assertOnQueue()
        return try BlockingBridge.run { try await self.count(for: request) }
    }

    /// The number of objects a request would return, as ``count(for:)``
    /// says, suspending the calling task while the database counts.
    ///
    /// Core Data equivalent: `count(for:)`.
    public func count<Result>(for request: FetchRequest<Result>) async throws -> Int {
        assertOnQueue()
        let entity = persistentStoreCoordinator.managedObjectModel.entitiesByName[request.entityName]
        return try await traced(.count, entity: entity) {
            try await readingFromReplica(request.allowsReadingFromReplica) { try await countInStore(request) }
        }
    }

    private func countInStore<Result>(_ request: FetchRequest<Result>) async throws -> Int {
        let entity = try entity(named: request.entityName)
        let pending = request.includesPendingChanges ? try pendingObjects(of: entity, matching: request.predicate) : PendingObjects()
        var countRequest = request
        countRequest.resultType = .count
        let (sql, bindings) = try countRequest.sql(for: entity, columns: "count(*)", excluding: pending.excludedKeys)
        activeSpan?.noteQuery(sql)
        let coordinator = persistentStoreCoordinator
        let counts = try await store { access in try await coordinator.fetchIntegers(sql: sql, bindings: bindings, access: access) }
        let total = Int(counts.first ?? 0) + pending.matching.count
        let afterOffset = max(0, total - request.fetchOffset)
        return request.fetchLimit > 0 ? min(afterOffset, request.fetchLimit) : afterOffset
    }

    func entity(named name: String) throws -> EntityDescription {
        guard let entity = persistentStoreCoordinator.managedObjectModel.entitiesByName[name] else {
            throw PostgresDataError.invalidRequest("the model has no entity \"\(name)\"; its entities are \(persistentStoreCoordinator.managedObjectModel.entities.map(\.name).joined(separator: ", "))")
        }
        return entity
    }

    // MARK: Objects

    /// Rows per batch handed from the store side to the context during a fetch.
    static let fetchStreamBatchSize = 5_000

    private func fetchIDs<Result>(_ request: FetchRequest<Result>, entity: EntityDescription) async throws -> [ManagedObjectID] {
        let pending = request.includesPendingChanges ? try pendingObjects(of: entity, matching: request.predicate) : PendingObjects()
        if pending.changesResults || (!entity.subentities.isEmpty && request.includesSubentities) {
            return try await fetchObjects(request, entity: entity, idsOnly: true, pending: pending).map(\.objectID)
        }
        let (sql, bindings) = try request.sql(for: entity, columns: "t.\"id\"")
        activeSpan?.noteQuery(sql)
        let coordinator = persistentStoreCoordinator
        let keys = try await store { access in try await coordinator.fetchIntegers(sql: sql, bindings: bindings, access: access) }
        return keys.map { ManagedObjectID(entity: entity, primaryKey: $0) }
    }

    /// Objects (or, with `idsOnly`, faults for IDs) of a request; `pending` when the caller
    /// has already judged the unsaved objects.
    private func fetchObjects<Result>(_ request: FetchRequest<Result>, entity: EntityDescription, idsOnly: Bool,
                                      pending known: PendingObjects? = nil) async throws -> [ManagedObject] {
        let pending = try known ?? (request.includesPendingChanges ? pendingObjects(of: entity, matching: request.predicate) : PendingObjects())
        let storeRequest = Self.storeRequest(request, pending: pending)
        let coordinator = persistentStoreCoordinator
        var objects: [ManagedObject]
        if !entity.subentities.isEmpty && request.includesSubentities {
            objects = try await fetchHierarchy(storeRequest, entity: entity, excluding: pending.excludedKeys,
                                               faultsOnly: idsOnly || request.fetchBatchSize > 0 || !request.includesPropertyValues)
        } else if idsOnly || request.fetchBatchSize > 0 || !request.includesPropertyValues {
            let (sql, bindings) = try storeRequest.sql(for: entity, columns: "t.\"id\"", excluding: pending.excludedKeys)
            activeSpan?.noteQuery(sql)
            let keys = try await store { access in try await coordinator.fetchIntegers(sql: sql, bindings: bindings, access: access) }
            objects = keys.map { object(with: ManagedObjectID(entity: entity, primaryKey: $0)) }
        } else {
            // propertiesToFetch on objects: the other columns are read as NULL, the objects partial.
            let missing = try Self.missingProperties(of: entity, fetching: request.propertiesToFetch,
                                                     sortedBy: request.sortDescriptors.map(\.key))
            let (sql, bindings) = try storeRequest.sql(for: entity, columns: PersistentStoreCoordinator.selectList(entity, missing: missing),
                                                        excluding: pending.excludedKeys)
            activeSpan?.noteQuery(sql)
            let cachesRows = request.returnsObjectsAsFaults && !readsOutsideRowCache && missing == nil
            // The faults of a large result keep their rows to themselves, as an asynchronous
            // fetch's do: a million row-cache entries made, looked up as the faults fire, and
            // removed again cost more than the fetch.
            let keepsRows = cachesRows && !request.shouldRefreshRefetchedObjects
            let mark = coordinator.cachedRowsMark()
            var query = try await store { access in
                try await coordinator.querySnapshots(sql: sql, bindings: bindings, entity: entity, batchSize: Self.fetchStreamBatchSize,
                                                     cachesRows: cachesRows && !keepsRows, access: access)
            }
            var keptBy: RowCache.Reader?
            if keepsRows && query.rest != nil {
                keptBy = coordinator.beginReadingCachedRows(unchangedSince: mark)
                // The cache changed since the query began: the rows go through it, as a smaller
                // result's do, and it is sized for them first.
                if keptBy == nil { coordinator.reserveCachedRows(query.total, for: entity) }
            }
            var registered: [ManagedObject] = []
            // A fetch into an empty map claims it: its objects enter it unlooked-up, while no
            // one else registers objects (between batches, other blocks may run).
            var claim = self.registered.claimIfEmpty()
            func register(_ batch: SnapshotBatch) {
                if let keptBy, let rows = EncodedRows.batch(of: batch, reader: keptBy) {
                    return registerFaults(rows, entity: entity, madeAhead: batch.madeAhead, claim: &claim, appendingTo: &registered)
                }
                self.register(batch, entity: entity, asFaults: request.returnsObjectsAsFaults && missing == nil,
                              sharesRows: request.returnsObjectsAsFaults && missing == nil,
                              refreshingChanged: request.shouldRefreshRefetchedObjects && missing == nil,
                              missing: missing, madeAhead: batch.madeAhead, claim: &claim, appendingTo: &registered)
            }
            if query.rest != nil {
                var rest = query.rest
                query.rest = nil
                // Sized once for the whole result: growing a map of a million objects batch by
                // batch would rehash it about eight times.
                registered.reserveCapacity(query.total)
                self.registered.reserve(query.total, under: claim)
                // Decoding (on the library's executor, off the connection) and registering
                // (here) overlap, batch by batch. Only the decoding task keeps the result, so
                // it is freed once decoded, while the last batches are registered. While the
                // context is behind, the task makes batches' objects too (``ObjectsMadeAhead``).
                let channel = BatchChannel<SnapshotBatch>()
                let lead = objectsMadeAheadLead
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask(executorPreference: LibraryExecutor.shared) { [rest] in
                        guard let rest else { return channel.finish(nil) }
                        await rest.decode(batchSize: Self.fetchStreamBatchSize, into: channel, makingObjectsOf: entity, lead: lead)
                    }
                    rest = nil
                    register(query.first)
                    while let batch = try await channel.next() { register(batch) }
                }
            } else {
                register(query.first)
            }
            objects = registered
        }
        objects = try merging(pending, into: objects, for: request)
        guard !idsOnly else { return objects }
        if request.fetchBatchSize > 0 && entity.subentities.isEmpty {
            // (A hierarchy's objects are of several entities: each fault fills by itself.)
            var start = 0
            while start < objects.count {
                let end = min(objects.count, start + request.fetchBatchSize)
                let batch = FaultingBatch(entity: entity, ids: objects[start..<end].map(\.objectID),
                                          prefetching: request.relationshipKeyPathsForPrefetching)
                for object in objects[start..<end] where !object.isInsertedStorage { object.faultingBatch = batch }
                start = end
            }
        } else if !request.relationshipKeyPathsForPrefetching.isEmpty && request.includesPropertyValues {
            try await prefetch(request.relationshipKeyPathsForPrefetching, for: objects, entity: entity)
        }
        return objects
    }

    /// The stored properties an object fetch with `propertiesToFetch` leaves unread (nil: it
    /// reads them all). Core Data's partial objects: the rest loads on first access.
    /// The sort keys of the object's own are read too, for merging unsaved objects in order.
    static func missingProperties(of entity: EntityDescription, fetching properties: [FetchedProperty]?,
                                  sortedBy sortKeys: [String] = []) throws -> PropertySet? {
        guard let properties else { return nil }
        var fetched = Set<Int>()
        for key in sortKeys { if let index = entity.propertyIndex(named: key) { fetched.insert(index) } }
        for property in properties {
            guard case .keyPath(let name) = property else {
                throw PostgresDataError.invalidRequest("propertiesToFetch of a fetch of \(entity.name) objects names properties, not expressions (\(property.name)); fetch dictionaries for expressions")
            }
            if entity.propertyIndex(named: name) == nil, let elements = entity.compositeIndices(named: name) {
                fetched.formUnion(elements)
                continue
            }
            guard let index = entity.propertyIndex(named: name), entity.columnIndices.contains(index) else {
                throw PostgresDataError.invalidRequest("propertiesToFetch of a fetch of \(entity.name) objects names \"\(name)\", which is not one of its attributes or to-one relationships (\(entity.columnIndices.map { entity.properties[$0].name }.joined(separator: ", ")))")
            }
            fetched.insert(index)
        }
        var missing = PropertySet()
        for index in entity.columnIndices where !fetched.contains(index) { missing.insert(index) }
        return missing.isEmpty ? nil : missing
    }

    /// The request the store runs: with pending changes, the window (offset, limit) is cut
    /// after merging, so the store is asked for everything up to its end.
    static func storeRequest<Result>(_ request: FetchRequest<Result>, pending: PendingObjects) -> FetchRequest<Result> {
        var storeRequest = request
        if pending.changesResults {
            storeRequest.fetchOffset = 0
            let (end, overflow) = max(0, request.fetchOffset).addingReportingOverflow(request.fetchLimit)
            storeRequest.fetchLimit = request.fetchLimit > 0 ? (overflow ? 0 : end) : 0
        }
        return storeRequest
    }

    /// The store's objects with the pending ones merged in sort order, cut to the request's window.
    func merging<Result>(_ pending: PendingObjects, into objects: [ManagedObject], for request: FetchRequest<Result>) throws -> [ManagedObject] {
        guard pending.changesResults else { return objects }
        let merged = try merge(pending.matching, into: objects, sortedBy: request.sortDescriptors)
        let start = min(request.fetchOffset, merged.count)
        let end = request.fetchLimit > 0 ? start + min(request.fetchLimit, merged.count - start) : merged.count
        return Array(merged[start..<end])
    }

    /// The unsaved objects of an entity a fetch must judge in memory.
    struct PendingObjects {
        /// Inserted and updated objects that match the predicate on their current values.
        var matching: [ManagedObject] = []
        /// Keys of updated and deleted rows: the store's answer leaves them out.
        var excludedKeys: [Int64] = []

        var changesResults: Bool { !matching.isEmpty || !excludedKeys.isEmpty }
    }

    func pendingObjects(of entity: EntityDescription, matching predicate: FetchPredicate?) throws -> PendingObjects {
        var pending = PendingObjects()
        var candidates: [ManagedObject] = []
        // Objects of sub-entities are objects of the entity too.
        let kinds = Set(entity.selfAndDescendants.map(ObjectIdentifier.init))
        for object in updatedSet.values where kinds.contains(ObjectIdentifier(object.entity)) {
            if let key = object.objectID.primaryKey { pending.excludedKeys.append(key) }
            if !object.isDeletedStorage { candidates.append(object) }
        }
        for object in deletedSet.values where kinds.contains(ObjectIdentifier(object.entity)) && !object.isInsertedStorage {
            if let key = object.objectID.primaryKey, updatedSet[ObjectIdentifier(object)] == nil { pending.excludedKeys.append(key) }
        }
        for object in insertedSet.values where kinds.contains(ObjectIdentifier(object.entity)) && !object.isDeletedStorage {
            candidates.append(object)
        }
        guard let predicate, !candidates.isEmpty else {
            pending.matching = candidates
            return pending
        }
        var compiler = PredicateSQL(entity: entity)
        _ = try compiler.condition(predicate.node)
        var evaluator = PredicateEvaluator()
        pending.matching = try candidates.filter { try evaluator.evaluate(predicate.node, on: $0) }
        return pending
    }

    /// Merges objects judged in memory into the store's sorted results, keeping the store's
    /// order for its own rows (the database's collation decides it) and placing each
    /// changed object by the same sort descriptors, then by primary key.
    private func merge(_ changed: [ManagedObject], into stored: [ManagedObject],
                       sortedBy descriptors: [FetchSortDescriptor]) throws -> [ManagedObject] {
        guard !changed.isEmpty else { return stored }
        let order = ObjectOrder(descriptors: descriptors)
        var extras = changed
        var failure: Error?
        extras.sort { a, b in
            do { return try order.precedes(a, b) } catch { failure = failure ?? error; return false }
        }
        if let failure { throw failure }
        var merged: [ManagedObject] = []
        merged.reserveCapacity(stored.count + extras.count)
        var low = 0
        for extra in extras {
            // The first stored object that should come after `extra`, found by bisection.
            var high = stored.count
            var lower = low
            while lower < high {
                let middle = (lower + high) / 2
                if try order.precedes(extra, stored[middle]) { high = middle } else { lower = middle + 1 }
            }
            merged.append(contentsOf: stored[low..<lower])
            merged.append(extra)
            low = lower
        }
        merged.append(contentsOf: stored[low...])
        return merged
    }

    // MARK: Dictionaries

    /// `Result` is ``FetchedDictionary`` or `[String: AttributeValue]`.
    private func fetchDictionaries<Result>(_ request: FetchRequest<Result>, entity: EntityDescription) async throws -> [Result] {
        let (sql, bindings, columns) = try request.dictionarySQL(for: entity)
        activeSpan?.noteQuery(sql)
        let coordinator = persistentStoreCoordinator
        if Result.self == FetchedDictionary.self {
            let rows = try await store { access in try await coordinator.fetchDictionaryRows(sql: sql, bindings: bindings, columns: columns, access: access) }
            if let results = rows.results as? [Result] { return results }
        }
        let dictionaries = try await store { access in try await coordinator.fetchDictionaries(sql: sql, bindings: bindings, columns: columns, access: access) }
        if let results = dictionaries as? [Result] { return results }
        throw PostgresDataError.invalidRequest("a dictionary fetch returns FetchedDictionary or [String: AttributeValue], not \(Result.self)")
    }

    // MARK: Prefetching

    /// Fetches the objects at the end of each key path for all `objects` at once: one query
    /// per relationship (per key-path component), never one per object.
    func prefetch(_ keyPaths: [String], for objects: [ManagedObject], entity: EntityDescription) async throws {
        var tails = OrderedDictionary<String, [String]>()
        for keyPath in keyPaths {
            let components = keyPath.split(separator: ".", maxSplits: 1).map(String.init)
            tails[components[0], default: []].append(contentsOf: components.dropFirst())
        }
        let coordinator = persistentStoreCoordinator
        for (name, rest) in tails {
            guard let index = entity.propertyIndex(named: name) else {
                throw PredicateSQL.unknownKey(name, in: entity, path: name)
            }
            guard entity.properties[index].relationship != nil else {
                throw PostgresDataError.invalidRequest("\(entity.name).\(name) is an attribute; relationshipKeyPathsForPrefetching names relationships")
            }
            let destination = entity.destination(of: index)
            // A relationship to a parent entity: its fault reads each object's own entity.
            guard destination.subentities.isEmpty else { continue }
            var related: [ManagedObject] = []
            switch entity.storage(of: index) {
            case .foreignKey:
                var keys = OrderedSet<Int64>()
                let faults = objects.filter { $0.isFaultStorage && !$0.isInsertedStorage }
                let faultRows = Dictionary(zip(faults.map(ObjectIdentifier.init), rowsWithoutQuery(for: faults)),
                                           uniquingKeysWith: { first, _ in first })
                for object in objects where !object.isInsertedStorage {
                    let values = object.isFaultStorage ? faultRows[ObjectIdentifier(object)]??.values : object.values
                    if let values, case .object(let id) = values[index], let key = id.primaryKey { keys.append(key) }
                }
                let missing = keys.filter { key in
                    registered[ManagedObjectID(entity: destination, primaryKey: key)].map(\.isFaultStorage) ?? true
                }
                if !missing.isEmpty {
                    let wanted = Array(missing)
                    let rows = try await store { access in try await coordinator.fetchSnapshots(destination, keys: wanted, access: access) }
                    _ = register(rows, entity: destination, asFaults: false)
                }
                related = keys.compactMap { registered[ManagedObjectID(entity: destination, primaryKey: $0)] }
            case .inverseForeignKey, .joinTable:
                let owners = objects.filter { !$0.isInsertedStorage && $0.objectID.primaryKey != nil && $0.relationshipSets[index] == nil }
                guard !owners.isEmpty else { break }
                let ownerKeys = owners.compactMap(\.objectID.primaryKey)
                let sql = RelationshipFetchPlan.ownedRows(of: entity, relationship: index)
                let bindings = try PostgresBindings(ownerKeys)
                let rows = try await store { access in try await coordinator.fetchOwnedSnapshots(sql: sql, bindings: bindings, entity: destination, access: access) }
                related = register(rows.map { ($0.key, $0.snapshot) }, entity: destination, asFaults: false)
                var byOwner: [Int64: [ManagedObjectID]] = [:]
                var positions: [Int64: [Double]] = [:]
                for (row, object) in zip(rows, related) {
                    byOwner[row.owner, default: []].append(object.objectID)
                    if let position = row.position { positions[row.owner, default: []].append(position) }
                }
                let ordered = entity.orderColumn(of: index) != nil
                for owner in owners {
                    let key = owner.objectID.primaryKey
                    owner.relationshipSets[index] = RelationshipSet(ids: key.flatMap { byOwner[$0] } ?? [],
                                                                    positions: ordered ? key.flatMap { positions[$0] } ?? [] : nil)
                }
            }
            if !rest.isEmpty && !related.isEmpty {
                var seen = Set<ObjectIdentifier>()
                let unique = related.filter { seen.insert(ObjectIdentifier($0)).inserted }
                try await prefetch(rest, for: unique, entity: destination)
            }
        }
    }

    // MARK: Batched faults

    /// Fills every fault of a batch in one query (rows still in the row cache cost none),
    /// then lets the batch filled longest ago go back to being faults.
    func fill(_ batch: FaultingBatch) throws {
        let faults = batch.ids.compactMap { id -> ManagedObject? in
            guard let object = registered[id], object.isFaultStorage, object.faultingBatch === batch else { return nil }
            return object
        }
        let cached = rowsWithoutQuery(for: faults)
        var missing: [Int64] = []
        for (object, snapshot) in zip(faults, cached) {
            if let snapshot {
                fill(object, snapshot: snapshot)
            } else if let key = object.objectID.primaryKey {
                missing.append(key)
            }
        }
        if !missing.isEmpty {
            let entity = batch.entity
            let coordinator = persistentStoreCoordinator
            let keys = missing
            let rows = try blockingStore { access in try await coordinator.fetchSnapshots(entity, keys: keys, access: access) }
            _ = register(rows, entity: entity, asFaults: false)
        }
        if !batch.prefetching.isEmpty {
            let filled = faults.filter { !$0.isFaultStorage }
            try BlockingBridge.run { try await self.prefetch(batch.prefetching, for: filled, entity: batch.entity) }
        }
        filledBatches.removeAll { $0 === batch }
        filledBatches.append(batch)
        if filledBatches.count > FaultingBatch.filledLimit {
            let evicted = filledBatches.removeFirst()
            for id in evicted.ids {
                guard let object = registered[id], object.faultingBatch === evicted, !object.isFaultStorage,
                      !object.hasChanges else { continue }
                turnIntoFault(object)
            }
        }
    }
}
