import PostgresClient
import Tracing

extension ManagedObjectContext {
    /// Runs a batch update on the store (one statement, bypassing every context) and then
    /// tells ``BatchUpdateRequest/contextsToMerge`` of the updated objects.
    ///
    /// Core Data equivalent: `execute(_:)` with an `NSBatchUpdateRequest`. Call it from
    /// anywhere: it does not use this context's queue or objects.
    public func execute(_ request: BatchUpdateRequest) async throws -> BatchUpdateResult {
        try checkWritable("run a batch update")
        let result = try await run(request, access: makeStoreAccess(readsFromReplica: false))
        Self.merge([.updated: Set(result.objectIDs)], into: request.contextsToMerge, from: self)
        return result
    }

    /// Runs a batch update from this context's queue, blocking it until the statement ends.
    ///
    /// Core Data equivalent: `execute(_:)` inside `perform`.
    public func execute(_ request: BatchUpdateRequest) throws -> BatchUpdateResult {
        try checkWritable("run a batch update")
        let result = try blockingStore { access in try await self.run(request, access: access) }
        Self.merge([.updated: Set(result.objectIDs)], into: request.contextsToMerge, from: self)
        return result
    }

    private func run(_ request: BatchUpdateRequest, access: StoreAccess?) async throws -> BatchUpdateResult {
        let entity = try entity(named: request.entityName)
        let plan = try request.plan(for: entity, returningIDs: !request.contextsToMerge.isEmpty, history: historyOrigin)
        let coordinator = persistentStoreCoordinator
        return try await StoreOperation.batchUpdate.traced(entity: entity, store: try? coordinator.loaded()) { span in
            span.noteQuery(plan.sql)
            let result = try await coordinator.execute(plan, entity: entity, resultType: request.resultType, access: access)
            Self.noteWritten(result.count, kind: "update", entity: entity, span: span, coordinator: coordinator)
            return result
        }
    }

    /// Notes the rows a batch request wrote on its span and in the store's metrics.
    static func noteWritten(_ count: Int, kind: String, entity: EntityDescription, span: any Span,
                            coordinator: PersistentStoreCoordinator) {
        if span.isRecording { span.attributes["db.response.affected_rows"] = count }
        (try? coordinator.loaded())?.metrics.recordWrittenRows(count, kind: kind, collection: entity.tableName)
    }

    /// Tells contexts of a batch request's changes (after it committed, never from inside
    /// the store work: a context waiting for that work could not take the merge).
    /// `writer` is the context that ran the request: the merging contexts read from the
    /// replica only once it has replayed the request.
    /// The changes are gathered only when a context is to merge them: a batch of a million
    /// rows makes sets of a million IDs.
    static func merge(_ changes: @autoclosure () -> [ChangeKey: Set<ManagedObjectID>], into contexts: [ManagedObjectContext],
                      from writer: ManagedObjectContext) {
        guard !contexts.isEmpty else { return }
        let changes = changes()
        if let position = writer.replayFloor {
            for context in contexts { context.raiseReplayFloor(to: position) }
        }
        mergeChanges(fromRemoteContextSave: changes, into: contexts)
    }
}

extension ManagedObjectContext {
    /// Runs a batch delete on the store (one `DELETE … RETURNING id`, bypassing every
    /// context), then tells ``BatchDeleteRequest/contextsToMerge`` what went.
    ///
    /// Core Data equivalent: `execute(_:)` with an `NSBatchDeleteRequest`. Call it from anywhere.
    public func execute(_ request: BatchDeleteRequest) async throws -> BatchDeleteResult {
        try checkWritable("run a batch delete")
        if request.objectIDs?.isEmpty == true { return BatchDeleteResult(nothingFor: request) }
        let entity = try entity(named: request.entityName)
        let coordinator = persistentStoreCoordinator
        let history = historyOrigin
        let result = try await coordinator.tracedExecute(request, entity: entity, history: history,
                                                         access: makeStoreAccess(readsFromReplica: false))
        Self.merge(result, into: request.contextsToMerge, from: self)
        return result
    }

    /// Runs a batch delete from this context's queue, blocking it until the statement ends.
    public func execute(_ request: BatchDeleteRequest) throws -> BatchDeleteResult {
        try checkWritable("run a batch delete")
        if request.objectIDs?.isEmpty == true { return BatchDeleteResult(nothingFor: request) }
        let entity = try entity(named: request.entityName)
        let coordinator = persistentStoreCoordinator
        let history = historyOrigin
        let result = try blockingStore { access in try await coordinator.tracedExecute(request, entity: entity, history: history, access: access) }
        Self.merge(result, into: request.contextsToMerge, from: self)
        return result
    }

    private static func merge(_ result: BatchDeleteResult, into contexts: [ManagedObjectContext], from writer: ManagedObjectContext) {
        merge([.deleted: Set(result.objectIDs + result.cascadedObjectIDs), .updated: Set(result.nullifiedObjectIDs)], into: contexts, from: writer)
    }
}

extension ManagedObjectContext {
    /// Runs a batch insert on the store, in one transaction, then tells
    /// ``BatchInsertRequest/contextsToMerge`` of the new rows.
    ///
    /// Core Data equivalent: `execute(_:)` with an `NSBatchInsertRequest`. Call it from anywhere.
    public func execute(_ request: BatchInsertRequest) async throws -> BatchInsertResult {
        try checkWritable("run a batch insert")
        let result = try await run(request, access: makeStoreAccess(readsFromReplica: false))
        Self.merge(result.changes, into: request.contextsToMerge, from: self)
        return result
    }

    /// Runs a batch insert from this context's queue, blocking it until it ends.
    public func execute(_ request: BatchInsertRequest) throws -> BatchInsertResult {
        try checkWritable("run a batch insert")
        let result = try blockingStore { access in try await self.run(request, access: access) }
        Self.merge(result.changes, into: request.contextsToMerge, from: self)
        return result
    }

    private func run(_ request: BatchInsertRequest, access: StoreAccess?) async throws -> BatchInsertResult {
        let entity = try entity(named: request.entityName)
        let history = historyOrigin
        let plan = try request.plan(for: entity, returningIDs: history != nil)
        let coordinator = persistentStoreCoordinator
        return try await StoreOperation.batchInsert.traced(entity: entity, store: try? coordinator.loaded()) { span in
            let result = try await coordinator.execute(plan, entity: entity, resultType: request.resultType, history: history, access: access)
            Self.noteWritten(result.count, kind: "insert", entity: entity, span: span, coordinator: coordinator)
            return result
        }
    }
}
