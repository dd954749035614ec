import Foundation
import PostgresClient

extension ManagedObjectContext {
    /// Writes the context's changes: to the database in one transaction for a root context,
    /// into the parent for a child context.
    ///
    /// Core Data equivalent: `save()`. Before anything is written every inserted, updated and
    /// deleted object is validated, and all failures are thrown together. The transaction
    /// inserts each entity's new rows in one `INSERT … SELECT FROM unnest(…)`, updates rows
    /// in one version-checked `UPDATE … FROM unnest(…)` per entity and set of changed
    /// columns, and deletes in one version-checked `DELETE … USING unnest(…)` per entity.
    /// A save of up to 500 rows is one round trip (`BEGIN`, the statements, `COMMIT` pipelined).
    /// Rows changed underneath are resolved by ``mergePolicy``. When the save throws, the
    /// database is unchanged and the context still holds every change, to fix and retry; the
    /// inserted objects of a save of more than 500 rows may by then hold permanent IDs, as
    /// after ``obtainPermanentIDs(for:)-4cry7`` (a larger save allocates keys while its will-save
    /// hooks run, and makes them permanent while the database writes). A context inserting
    /// thousands of objects draws most of their keys in the background while they are
    /// inserted, so a large save hardly waits for them; keys it leaves unused (objects deleted
    /// or rolled back first) are skipped values of the sequence.
    ///
    /// This form blocks the context's thread while the database works; in async code, use
    /// ``save()``'s `await` form, which suspends instead.
    public func save() throws {
        assertOnQueue()
        try BlockingBridge.run { try await self.save() }
    }

    /// Writes the context's changes as ``save()`` does, suspending the calling task instead of
    /// blocking a thread while the database works; call it inside ``perform(_:)-(()->T)``.
    ///
    /// Core Data equivalent: `save()`.
    public func save() async throws {
        assertOnQueue()
        propagateDeferredDeletes()
        processPendingChanges()
        try throwRecordedErrors()
        guard hasChanges else { return }
        try checkWritable("save")
        notificationHub.post(.willSave(contextName: name))
        let saved: ChangedObjects
        if let parent {
            saved = try ManagedObject.callWillSave(in: self)
            try validateChanges()
            try save(into: parent)
        } else {
            let keysCover: ObjectSet.Membership?
            (saved, keysCover) = try await allocatingKeys {
                let saved = try ManagedObject.callWillSave(in: self)
                try validateChanges()
                return saved
            }
            try await traced(.save, entity: nil) { try await saveToStore(keysCover: keysCover) }
            advanceQueryGeneration()
        }
        saved.forEachBorrowed { $0.didSave() }
    }

    /// Runs `body` (the will-save hooks and validation) while the store allocates the keys of
    /// a large save's inserted objects, which the server takes a while to produce (`nextval`
    /// once per row). A smaller save asks for its keys afterwards, in ``saveToStore(keysCover:)``.
    /// Also returns the inserted objects' membership when every one of them has its key (no
    /// object joined while `body` ran), which spares the save a second pass over them.
    private func allocatingKeys<T>(during body: () throws -> T) async throws -> (T, ObjectSet.Membership?) {
        guard insertedSet.count > SavePlan.pipelineLimit, let request = KeyRequest(insertedSet),
              let drawing = keyDrawing(for: request) else {
            return (try body(), nil)
        }
        let requested = insertedSet.membership
        // Should `body` throw, the drawing is cancelled and waited for: the keys it may have
        // taken are left unused, as a rolled-back `nextval`'s are.
        let (result, keys) = try await whileStoreWorks(drawing, run: body)
        try assign(keys, for: request)
        return (result, insertedSet.membership == requested ? requested : nil)
    }

    /// The store's work that brings the keys `request` needs (nil when the reserved ones cover
    /// it): a key reservation still on its way (see ``KeyReservation``) is waited for while the
    /// keys it does not cover are drawn; should it fail, its keys are drawn then. It returns
    /// the reservation's keys and the drawn ones, for ``assign(_:for:)``.
    private func keyDrawing(for request: KeyRequest) -> (@Sendable () async throws -> (reserved: KeyReservation.Keys, drawn: KeyReservation.Keys))? {
        let coordinator = persistentStoreCoordinator
        let arriving = keyReservation?.takeArriving()
        let counts = keyReservation?.missing(from: request.counts, arriving: arriving) ?? request.counts
        guard arriving != nil || !counts.isEmpty else { return nil }
        return {
            async let drawn = coordinator.allocateKeys(counts)
            guard let arriving else { return ([:], try await drawn) }
            if let reserved = await arriving.keys() { return (reserved, try await drawn) }
            return (try await coordinator.allocateKeys(arriving.counts), try await drawn)
        }
    }

    /// Gives `request`'s objects the keys reserved for them and those drawn (``keyDrawing(for:)``).
    private func assign(_ keys: (reserved: KeyReservation.Keys, drawn: KeyReservation.Keys)?, for request: KeyRequest) throws {
        if let keys { keyReservation?.add(keys.reserved) }
        try request.assign(withReservedKeys(keys?.drawn ?? [:], for: request.counts), to: &insertedSet)
    }

    /// The reserved keys for `counts` and the ones the store drew for the rest, ascending:
    /// a reservation and a draw that ran at once may have interleaved their `nextval`s.
    private func withReservedKeys(_ drawn: [EntityDescription: [Int64]], for counts: [(EntityDescription, Int)]) -> [EntityDescription: [Int64]] {
        guard let keyReservation else { return drawn }
        var keys = keyReservation.take(counts)
        guard !keys.isEmpty else { return drawn }
        for (entity, more) in drawn where !more.isEmpty {
            keys[entity, default: []].append(contentsOf: more)
            keys[entity]?.sort()
        }
        return keys
    }

    /// Runs `body` on the context while `storeWork` runs on the library's executor (which
    /// blocked callers cannot exhaust), and returns both results; when `body` throws,
    /// `storeWork` is cancelled and waited for.
    private func whileStoreWorks<T, Stored: Sendable>(_ storeWork: @escaping @Sendable () async throws -> Stored,
                                                      run body: () throws -> T) async throws -> (T, Stored) {
        try await withThrowingTaskGroup(of: Stored.self) { group in
            group.addTask(executorPreference: LibraryExecutor.shared, operation: storeWork)
            let result = try body()
            guard let stored = try await group.next() else {
                throw PostgresDataError.invalidRequest("the store's work ended without a result")
            }
            return (result, stored)
        }
    }

    /// Allocates permanent IDs for inserted objects now, before they are saved, in one round
    /// trip for all of them (`nextval` of each entity's sequence).
    ///
    /// Core Data equivalent: `obtainPermanentIDs(for:)`. Pass the new IDs to other contexts
    /// before saving, or keep child contexts' IDs stable across the parent's save.
    public func obtainPermanentIDs(for objects: [ManagedObject]) throws {
        assertOnQueue()
        try BlockingBridge.run { try await self.obtainPermanentIDs(for: objects) }
    }

    /// Allocates permanent IDs as ``obtainPermanentIDs(for:)`` does, suspending the calling
    /// task while the database works.
    ///
    /// Core Data equivalent: `obtainPermanentIDs(for:)`.
    public func obtainPermanentIDs(for objects: [ManagedObject]) async throws {
        assertOnQueue()
        // (Objects with temporary IDs in this context are its inserted objects.)
        let positions = objects.compactMap { $0.objectID.isTemporaryID && $0.managedObjectContext === self ? insertedSet.position(of: $0) : nil }
        guard !positions.isEmpty else { return }
        try await allocateKeys(at: positions)
        makeAllocatedKeysPermanent(at: positions)
    }

    /// Allocates keys for the inserted objects at `positions` (all when nil) that need one.
    private func allocateKeys(at positions: [Int]? = nil) async throws {
        guard let request = KeyRequest(insertedSet, at: positions) else { return }
        var keys: (reserved: KeyReservation.Keys, drawn: KeyReservation.Keys)?
        if let drawing = keyDrawing(for: request) { keys = try await store { _ in try await drawing() } }
        try assign(keys, for: request)
    }

    /// The key allocated to an inserted object whose ID is still temporary (0: none).
    func allocatedKey(of object: ManagedObject) -> Int64 {
        guard object.objectID.isTemporaryID, let position = insertedSet.position(of: object) else { return 0 }
        return insertedSet.allocatedKey(at: position)
    }

    /// The permanent ID a temporary ID will have: its object's allocated key.
    func allocatedID(for id: ManagedObjectID) -> ManagedObjectID? {
        guard id.isTemporaryID, let object = registered[id] else { return nil }
        let key = allocatedKey(of: object)
        return key == 0 ? nil : ManagedObjectID(entity: id.entity, primaryKey: key)
    }

    /// Counts the rows a save wrote, by entity and kind, on its span and in the metrics.
    private func noteWrittenRows(of plan: SavePlan) {
        let span = activeSpan.flatMap { $0.isRecording ? $0 : nil }
        span?.attributes["postgresdata.rows.inserted"] = insertedSet.count
        span?.attributes["postgresdata.rows.updated"] = updatedSet.count
        span?.attributes["postgresdata.rows.deleted"] = deletedSet.count
        guard let metrics = activeMetrics else { return }
        for (kind, entity, count) in plan.writtenRows {
            metrics.recordWrittenRows(count, kind: kind.rawValue, collection: entity.tableName)
        }
    }

    /// Counts the objects a save found changed underneath, by entity.
    private func noteConflicts(_ ids: [ManagedObjectID]) {
        if let span = activeSpan, span.isRecording { span.attributes["postgresdata.conflicts"] = ids.count }
        guard let metrics = activeMetrics else { return }
        var counts: [String: Int] = [:]
        for id in ids { counts[id.entity.tableName, default: 0] += 1 }
        for (table, count) in counts { metrics.recordConflicts(count, collection: table) }
    }

    /// Validates every changed object; throws all failures at once.
    private func validateChanges() throws {
        var failures: [ValidationFailure] = []
        func collect(_ body: () throws -> Void) throws {
            do { try body() } catch PostgresDataError.validation(let found) { failures += found }
        }
        try insertedSet.forEachBorrowed { object in
            if object.entity.isAbstract {
                let concrete = object.entity.fetchedEntities(includingSubentities: true).map(\.name)
                failures.append(ValidationFailure(objectID: object.objectID, key: "",
                                                  reason: "is an object of the abstract entity \(object.entity.name): insert one of its sub-entities (\(concrete.joined(separator: ", ")))"))
            }
            try collect(object.validateForInsert)
        }
        try updatedSet.forEachBorrowed { try collect($0.validateForUpdate) }
        try deletedSet.forEachBorrowed { try collect($0.validateForDelete) }
        if !failures.isEmpty { throw PostgresDataError.validation(failures) }
    }

    // MARK: Saving to the database

    private func saveToStore(keysCover: ObjectSet.Membership?) async throws {
        try checkUniquenessAmongChanges()
        if keysCover != insertedSet.membership { try await allocateKeys() }
        for _ in 0..<10 {
            let plan = try makePlan()
            activeSpan?.noteQuery(plan.statements.map(\.sql).joined(separator: "; "))
            let outcome: SaveOutcome
            do {
                outcome = try await execute(plan)
            } catch {
                if let conflicts = try await constraintConflicts(behind: error) { throw PostgresDataError.constraintConflict(conflicts) }
                throw error
            }
            let completion = SaveCompletion(context: self)
            switch outcome {
            case .saved(let version, let upserted, let refreshed):
                noteWrittenRows(of: plan)
                completion.finish(version: version ?? 0, upserted: upserted, refreshed: refreshed)
                return
            case .conflicts(let conflicts):
                noteConflicts(conflicts.map(\.0))
                try completion.resolve(conflicts)
                if !hasChanges { return }
            }
        }
        throw PostgresDataError.invalidRequest("the save kept meeting new conflicts after 10 attempts; other writers change these rows continuously")
    }

    /// Runs `plan` in the store. While a large one runs (more than one round trip), the
    /// inserted objects take their allocated keys as permanent IDs, which `SaveCompletion`
    /// would do after the commit: should the save fail, they keep them, as after
    /// ``obtainPermanentIDs(for:)``, and a retry inserts them with the same keys. Not when new
    /// objects may resolve to existing rows: their IDs are known only after the commit.
    private func execute(_ plan: SavePlan) async throws -> SaveOutcome {
        let coordinator = persistentStoreCoordinator
        guard !plan.isPipelined, !plan.upsertsRows, !insertedSet.isEmpty else {
            return try await store { access in try await coordinator.execute(plan, access: access) }
        }
        let access = makeStoreAccess()
        return try await whileStoreWorks({ try await coordinator.execute(plan, access: access) }) {
            makeAllocatedKeysPermanent()
        }.1
    }

    private func makePlan() throws -> SavePlan {
        func translate(_ values: [AttributeValue], of object: ManagedObject) throws -> [AttributeValue] {
            guard object.entity.hasForeignKeys else { return values }
            var values = values
            for index in object.entity.columnIndices {
                guard case .object(let id) = values[index], id.isTemporaryID else { continue }
                guard let replacement = allocatedID(for: id) else {
                    throw PostgresDataError.invalidRequest("\(object.objectID).\(object.entity.properties[index].name) points at \(id), which is neither saved nor being inserted in this context")
                }
                values[index] = .object(replacement)
            }
            return values
        }
        func key(_ id: ManagedObjectID) -> Int64? { id.primaryKey ?? allocatedID(for: id)?.primaryKey }

        var inserts: [SavePlan.Insert] = []
        inserts.reserveCapacity(insertedSet.count)
        let inserted = insertedSet
        // Each object borrowed, its entity read once per run of one entity: a save of 100,000
        // new objects retains each one's values, and nothing else per object.
        var run: (entity: ObjectIdentifier, translates: Bool)?
        try inserted.forEachBorrowed(at: nil) { position, object in
            let id = object.objectID
            let entity = ObjectIdentifier(id.entity)
            if run?.entity != entity { run = (entity, id.entity.hasForeignKeys) }
            let values = object.values.array
            inserts.append(SavePlan.Insert(entity: id.entity, key: id.primaryKey ?? inserted.allocatedKey(at: position),
                                           values: run?.translates == true ? try translate(values, of: object) : values))
        }
        var updates: [SavePlan.Update] = []
        updates.reserveCapacity(updatedSet.count)
        // Objects of one entity changing the same properties (the usual save) share one array.
        var shared: (entity: EntityDescription, properties: PropertySet, columns: [Int], translates: Bool)?
        try updatedSet.forEachBorrowed { object in
            let properties = object.changedProperties
            let id = object.objectID
            if shared == nil || shared?.entity !== id.entity || shared?.properties != properties {
                shared = (id.entity, properties, id.entity.writableColumnIndices.filter(properties.contains), id.entity.hasForeignKeys)
            }
            let values = object.values.array
            updates.append(SavePlan.Update(entity: id.entity, key: id.primaryKey!, version: object.snapshot?.version ?? 0,
                                           values: shared?.translates == true ? try translate(values, of: object) : values,
                                           changed: shared?.columns ?? []))
        }
        let deletes = deletedSet.values.map {
            SavePlan.Delete(entity: $0.entity, key: $0.objectID.primaryKey!, version: $0.snapshot?.version ?? 0)
        }
        var joinInserts: [SavePlan.JoinChange] = []
        var joinDeletes: [SavePlan.JoinChange] = []
        // (Without relationship sets in the context, no object has any: no pass over them.)
        for objects in mayHoldRelationshipSets ? [insertedSet.values, updatedSet.values] : [] {
            for object in objects where object.hasRelationshipSets {
                for (index, set) in object.relationshipSets where !set.added.isEmpty || !set.removed.isEmpty {
                    guard case .joinTable(let table) = object.entity.storage(of: index), let source = key(object.objectID) else { continue }
                    for id in set.added where registered[id]?.isDeletedStorage != true {
                        if let destination = key(id) {
                            joinInserts.append(.init(table: table, source: source, destination: destination,
                                                     sourceEntity: object.entity, destinationEntity: id.entity))
                        }
                    }
                    for id in set.removed {
                        if let destination = key(id) {
                            joinDeletes.append(.init(table: table, source: source, destination: destination,
                                                     sourceEntity: object.entity, destinationEntity: id.entity))
                        }
                    }
                }
            }
        }
        var history = historyOrigin.map(HistoryRecord.init(origin:))
        if history != nil {
            for (entity, group) in SavePlan.grouped(inserts, by: \.entity) { history?.record(entity, .insert, keys: group.map(\.key)) }
            for (entity, group) in SavePlan.grouped(deletes, by: \.entity) { history?.record(entity, .delete, keys: group.map(\.key)) }
            // Tombstones from the deleted objects' snapshots: each deletion is version-checked,
            // so the row it removes holds exactly those values.
            for (entity, objects) in SavePlan.grouped(Array(deletedSet.values), by: \.entity) where !HistoryTombstones.preserved(in: entity).isEmpty {
                let rows = objects.compactMap { object in
                    object.objectID.primaryKey.flatMap { key in object.snapshot.map { (key: key, values: $0.values) } }
                }
                history?.attachTombstones(HistoryTombstones.encode(rows, entity: entity), to: entity)
            }
            // Grouped by entity and changed properties (the usual save: one group), their names
            // then made once per group.
            var updatedGroups: [UpdateGroup: (entity: EntityDescription, keys: [Int64])] = [:]
            for object in updatedSet.values {
                var changed = object.changedProperties
                for (index, set) in object.relationshipSets where !set.added.isEmpty || !set.removed.isEmpty || set.order != nil {
                    changed.insert(index)
                }
                guard let key = object.objectID.primaryKey else { continue }
                updatedGroups[UpdateGroup(entity: ObjectIdentifier(object.entity), changed: changed), default: (object.entity, [])].keys.append(key)
            }
            for (group, updated) in updatedGroups {
                let names = group.changed.map { updated.entity.properties[$0].name }.sorted()
                history?.record(updated.entity, .update, keys: updated.keys, updatedProperties: names)
            }
        }
        let order = orderChanges()
        plannedPositions = order.positions
        return try SavePlan(inserts: inserts, updates: updates, deletes: deletes, joinInserts: joinInserts,
                            joinDeletes: joinDeletes, history: history, uniqueness: mergePolicy.uniquenessResolution,
                            orderWrites: order.writes, refreshing: rowsWithMovedDerivations() + order.moved)
    }

    /// Updated objects that a save records alike in the history: of one entity, with the same
    /// changed properties.
    private struct UpdateGroup: Hashable {
        let entity: ObjectIdentifier
        let changed: PropertySet
    }

    /// Removes an object whose row is gone from the context.
    func forgetDeleted(_ object: ManagedObject) {
        detach(object)
        object.isDeletedStorage = true
        pendingChanges.deleted.insert(object.objectID)
    }

    /// Takes an object out of the context without deleting it: it keeps its values, and the
    /// context no longer knows it.
    func detach(_ object: ManagedObject) {
        let key = ObjectIdentifier(object)
        updatedSet[key] = nil
        deletedSet[key] = nil
        registered.remove(object.objectID)
        if object.holdsCacheReference {
            persistentStoreCoordinator.releaseCachedRows(CollectionOfOne(object.objectID))
            object.holdsCacheReference = false
        }
        object.changedProperties.removeAll()
        object.managedObjectContext = nil
    }

    /// Makes each loaded relationship's committed IDs what the context now sees, and clears
    /// its pending join-table changes (they were written).
    func rebaseRelationshipSets() {
        // The few objects with loaded relationships, found without copying the whole map.
        var holders: [ManagedObject] = []
        if mayHoldRelationshipSets { registered.forEach { object in if object.hasRelationshipSets { holders.append(object) } } }
        var rebased: [(ManagedObject, Int, [ManagedObjectID])] = []
        for object in holders {
            for index in object.relationshipSets.keys {
                rebased.append((object, index, relatedIDs(of: object, at: index)))
            }
        }
        for (object, index, ids) in rebased {
            // An ordered relationship keeps the positions the save wrote, or those it had.
            let old = object.relationshipSets[index]
            let positions = plannedPositions[ObjectIdentifier(object)]?[index] ?? (old?.ids == ids ? old?.positions : nil)
            object.relationshipSets[index] = RelationshipSet(ids: ids, positions: positions)
        }
        plannedPositions = [:]
    }

    /// Gives the inserted objects at `chosen` positions (all when nil) that have allocated keys
    /// their permanent IDs, everywhere in the context: the identity map, foreign-key values and
    /// loaded relationships that point at them.
    func makeAllocatedKeysPermanent(at chosen: [Int]? = nil) {
        let inserted = insertedSet
        // (An object listed twice takes its key once.)
        let candidates = chosen.map { Set($0).sorted() }
        /// Each object taking its key, borrowed: one with a key and a temporary ID still.
        func forEachTakingKey(_ body: (_ position: Int, _ key: Int64, ManagedObject) -> Void) {
            inserted.forEachBorrowed(at: candidates) { position, object in
                let key = inserted.allocatedKey(at: position)
                guard key != 0, object.objectID.isTemporaryID else { return }
                body(position, key, object)
            }
        }
        let model = persistentStoreCoordinator.managedObjectModel
        var destinations: Set<EntityDescription> = []
        // At most this many take their keys: exactly, unless nothing can point at them.
        var count = candidates?.count ?? inserted.count
        if model.entities.contains(where: { !$0.relationshipIndices.isEmpty }) {
            count = 0
            // Runs of objects of one entity (the usual save) hash their entity once.
            var last: ObjectIdentifier?
            forEachTakingKey { _, _, object in
                count += 1
                let entity = object.entity
                guard ObjectIdentifier(entity) != last else { return }
                last = ObjectIdentifier(entity)
                destinations.insert(entity)
            }
        }
        guard count > 0 else { return }
        let referenced = model.entities.contains { entity in
            entity.properties.indices.contains { entity.properties[$0].relationship != nil && destinations.contains(entity.destination(of: $0)) }
        }
        if referenced {
            for object in registered.objects {
                let entity = object.entity
                guard entity.hasForeignKeys || !object.relationshipSets.isEmpty, !object.values.isEmpty else { continue }
                for index in entity.columnIndices where entity.properties[index].relationship != nil {
                    guard destinations.contains(entity.destination(of: index)), case .object(let id) = object.values[index],
                          let replacement = allocatedID(for: id) else { continue }
                    object.values[index] = .object(replacement)
                }
                for (index, set) in object.relationshipSets where destinations.contains(entity.destination(of: index)) {
                    func map(_ id: ManagedObjectID) -> ManagedObjectID { allocatedID(for: id) ?? id }
                    object.relationshipSets[index] = RelationshipSet(
                        ids: set.ids.map(map), added: Set(set.added.map(map)), removed: Set(set.removed.map(map)),
                        order: set.order?.map(map), positions: set.positions)
                }
            }
        }
        var positions: [Int] = []
        positions.reserveCapacity(count)
        registered.rekey(count: count) { rekey in
            forEachTakingKey { position, key, object in
                positions.append(position)
                rekey(object) { object.objectID = ManagedObjectID(entity: object.entity, primaryKey: key) }
            }
        }
        for position in positions { insertedSet.setAllocatedKey(0, at: position) }
    }
}
