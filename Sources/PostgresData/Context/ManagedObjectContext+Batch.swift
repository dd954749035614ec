import PostgresClient

extension ManagedObjectContext {
    /// Runs a batch update on the store (one statement, bypassing every context) and then
    /// tells ``BatchUpdateRequest/contextsToMerge`` of the updated objects.
    ///
    /// Core Data equivalent: `execute(_:)` with an `NSBatchUpdateRequest`. Call it from
    /// anywhere: it does not use this context's queue or objects.
    public func execute(_ request: BatchUpdateRequest) async throws -> BatchUpdateResult {
        let coordinator = persistentStoreCoordinator
        let entity = try entity(named: request.entityName)
        let plan = try request.plan(for: entity, returningIDs: !request.contextsToMerge.isEmpty)
        let result = try await coordinator.execute(plan, entity: entity, resultType: request.resultType)
        if !request.contextsToMerge.isEmpty {
            Self.mergeChanges(fromRemoteContextSave: [.updated: Set(result.objectIDs)], into: request.contextsToMerge)
        }
        return result
    }

    /// Runs a batch update from this context's queue, blocking it until the statement ends.
    ///
    /// Core Data equivalent: `execute(_:)` inside `perform`.
    public func execute(_ request: BatchUpdateRequest) throws -> BatchUpdateResult {
        let coordinator = persistentStoreCoordinator
        let entity = try entity(named: request.entityName)
        let plan = try request.plan(for: entity, returningIDs: !request.contextsToMerge.isEmpty)
        let resultType = request.resultType
        let result = try runStore { try await coordinator.execute(plan, entity: entity, resultType: resultType) }
        if !request.contextsToMerge.isEmpty {
            Self.mergeChanges(fromRemoteContextSave: [.updated: Set(result.objectIDs)], into: request.contextsToMerge)
        }
        return result
    }
}

extension PersistentStoreCoordinator {
    /// Runs a batch update's statement and reads what it returns.
    func execute(_ plan: BatchUpdatePlan, entity: EntityDescription, resultType: BatchUpdateRequestResultType) async throws -> BatchUpdateResult {
        try await withConnection { connection in
            let rows = try await connection.query(plan.sql, bindings: plan.bindings)
            var result = BatchUpdateResult(resultType: resultType, count: 0, objectIDs: [], updatedValues: [:])
            switch plan.returning {
            case .count:
                result.count = Int(try rows.first?.decode(Int64.self, at: 0) ?? 0)
            case .ids:
                result.objectIDs.reserveCapacity(rows.count)
                for row in rows { result.objectIDs.append(ManagedObjectID(entity: entity, primaryKey: try row.decode(Int64.self, at: 0))) }
                result.count = result.objectIDs.count
            case .values(let columns):
                result.objectIDs.reserveCapacity(rows.count)
                for row in rows {
                    let id = ManagedObjectID(entity: entity, primaryKey: try row.decode(Int64.self, at: 0))
                    var values: [String: AttributeValue] = [:]
                    for (position, column) in columns.enumerated() {
                        switch column.decoding {
                        case .attribute(let type):
                            values[column.name] = try ValueCoding.decode(row, at: position + 1, as: type)
                        case .foreignKey(let destination):
                            values[column.name] = row.isNull(at: position + 1)
                                ? .null : .object(ManagedObjectID(entity: destination, primaryKey: try row.decode(Int64.self, at: position + 1)))
                        }
                    }
                    result.objectIDs.append(id)
                    result.updatedValues[id] = values
                }
                result.count = result.objectIDs.count
            }
            return result
        }
    }
}
