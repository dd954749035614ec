import PostgresClient
import Tracing

extension PersistentStoreCoordinator {
    /// ``execute(_:entity:history:)`` inside its span and duration metric.
    func tracedExecute(_ request: BatchDeleteRequest, entity: EntityDescription, history: HistoryRecord.Origin?,
                       access: StoreAccess?) async throws -> BatchDeleteResult {
        try await StoreOperation.batchDelete.traced(entity: entity, store: try? loaded()) { span in
            let result = try await execute(request, entity: entity, history: history, access: access)
            ManagedObjectContext.noteWritten(result.count, kind: "delete", entity: entity, span: span, coordinator: self)
            return result
        }
    }

    /// Runs a batch delete: the count in one statement, or, when IDs are wanted, the rows
    /// the delete rules reach read first (`FOR UPDATE`, so they cannot change meanwhile)
    /// and the `DELETE … RETURNING id`, in one transaction (with `history`, also the history
    /// of every row deleted or nullified).
    func execute(_ request: BatchDeleteRequest, entity: EntityDescription, history: HistoryRecord.Origin?,
                 access: StoreAccess?) async throws -> BatchDeleteResult {
        let plan = try BatchDeletePlan(request, entity: entity)
        var result = BatchDeleteResult(nothingFor: request)
        guard request.resultType == .objectIDs || !request.contextsToMerge.isEmpty || history != nil else {
            result.count = try await withWriteConnection(access) { connection in
                let rows = try await connection.query(plan.countingDelete, bindings: plan.bindings)
                return Int(try rows[0].decode(Int64.self, at: 0))
            }
            return result
        }
        return try await withWriteConnection(access) { connection in
            try await connection.withTransaction { connection in
                let keys = try await connection.query(plan.lockingSelect, bindings: plan.bindings)
                    .map { try $0.decode(Int64.self, at: 0) }
                var reached = Set(keys.map { ManagedObjectID(entity: entity, primaryKey: $0) })
                try await Self.reach(from: entity, keys: keys, on: connection, result: &result, seen: &reached)
                // The kept values of the rows about to go, read while they are locked.
                var tombstones: [(EntityDescription, String)] = []
                if history != nil {
                    let doomed = keys.map { ManagedObjectID(entity: entity, primaryKey: $0) } + result.cascadedObjectIDs
                    for (deleted, ids) in SavePlan.grouped(doomed, by: \.entity) where !HistoryTombstones.preserved(in: deleted).isEmpty {
                        let rows = try await Self.fetchSnapshots(deleted, keys: ids.compactMap(\.primaryKey), on: connection)
                        if let json = HistoryTombstones.encode(rows.map { (key: $0.0, values: $0.1.values) }, entity: deleted) {
                            tombstones.append((deleted, json))
                        }
                    }
                }
                let deleted = try await connection.query(plan.deleteByKeys, keys)
                result.objectIDs = try deleted.map { ManagedObjectID(entity: entity, primaryKey: try $0.decode(Int64.self, at: 0)) }
                result.count = result.objectIDs.count
                if let history {
                    var record = HistoryRecord(origin: history)
                    record.record(result.objectIDs + result.cascadedObjectIDs, .delete)
                    record.record(result.nullifiedObjectIDs, .update)
                    for (deleted, json) in tombstones { record.attachTombstones(json, to: deleted) }
                    try await record.write(on: connection)
                }
                return result
            }
        }
    }

    /// The rows that `cascade` and `nullify` rules stored as foreign keys in other tables
    /// reach from the rows `keys` of `entity`, following cascades to their end.
    private static func reach(from entity: EntityDescription, keys: [Int64], on connection: Connection,
                              result: inout BatchDeleteResult, seen: inout Set<ManagedObjectID>) async throws {
        guard !keys.isEmpty else { return }
        for index in entity.relationshipIndices {
            guard case .inverseForeignKey = entity.storage(of: index), let rule = entity.properties[index].relationship?.deleteRule,
                  rule == .cascade || rule == .nullify else { continue }
            let destination = entity.destination(of: index)
            let found = try await connection.query(BatchDeletePlan.reachingSelect(from: entity, relationship: index), keys)
                .map { ManagedObjectID(entity: destination, primaryKey: try $0.decode(Int64.self, at: 0)) }
            let new = found.filter { seen.insert($0).inserted }
            if rule == .cascade {
                result.cascadedObjectIDs += new
                try await reach(from: destination, keys: new.compactMap(\.primaryKey), on: connection, result: &result, seen: &seen)
            } else {
                result.nullifiedObjectIDs += new
            }
        }
    }

    /// Runs a batch update's statement and reads what it returns.
    func execute(_ plan: BatchUpdatePlan, entity: EntityDescription, resultType: BatchUpdateRequestResultType,
                 access: StoreAccess?) async throws -> BatchUpdateResult {
        try await withWriteConnection(access) { connection in
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

extension PersistentStoreCoordinator {
    func execute(_ plan: BatchInsertPlan, entity: EntityDescription, resultType: BatchInsertRequestResultType,
                 history: HistoryRecord.Origin?, access: StoreAccess?) async throws -> BatchInsertResult {
        try await withWriteConnection(access) { connection in
            try await connection.withTransaction { connection in
                var result = BatchInsertResult(resultType: resultType, count: 0, objectIDs: [])
                for step in plan.steps {
                    switch step {
                    case .execute(let sql):
                        _ = try await connection.query(sql)
                    case .copy(let table, let columns, let rows, let count, let isStaging):
                        _ = try await connection.copyRows(into: table, columns: columns) { writer in
                            try writer.appendEncodedRows(rows, count: count)
                        }
                        if !isStaging { result.count += count }
                    case .stream(let table, let columns, let rows, let isStaging):
                        let copied = try await connection.copyRows(into: table, columns: columns) { writer in
                            try rows.write(entity, to: &writer)
                        }
                        if !isStaging { result.count += copied }
                    case .insert(let sql, let bindings, let returnsIDs, let updated):
                        let rows = try await connection.query(sql, bindings: bindings)
                        if returnsIDs {
                            for row in rows {
                                let id = ManagedObjectID(entity: entity, primaryKey: try row.decode(Int64.self, at: 0))
                                result.objectIDs.append(id)
                                if updated != nil, try !row.decode(Bool.self, at: 1) { result.updatedObjectIDs.append(id) }
                            }
                            result.count += rows.count
                        } else {
                            result.count += Int(try rows.first?.decode(Int64.self, at: 0) ?? 0)
                        }
                    }
                }
                if let history {
                    var record = HistoryRecord(origin: history)
                    let updated = Set(result.updatedObjectIDs)
                    record.record(result.objectIDs.filter { !updated.contains($0) }, .insert)
                    if !updated.isEmpty {
                        record.record(entity, .update, keys: result.updatedObjectIDs.compactMap(\.primaryKey),
                                      updatedProperties: plan.updatedProperties)
                    }
                    try await record.write(on: connection)
                }
                return result
            }
        }
    }
}
