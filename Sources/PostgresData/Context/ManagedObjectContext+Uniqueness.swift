import PostgresClient

extension ManagedObjectContext {
    /// Throws ``PostgresDataError/constraintConflict(_:)`` when objects of this save share the
    /// values of a unique key: no merge policy can give one row to two objects.
    func checkUniquenessAmongChanges() throws {
        var conflicts: [ConstraintConflict] = []
        for (entity, objects) in objectsWithUniqueKeys() {
            for key in entity.uniqueKeys {
                var holders: [[AttributeValue]: [ManagedObject]] = [:]
                for object in objects {
                    guard let values = Self.values(of: key, in: object) else { continue }
                    holders[values, default: []].append(object)
                }
                for (values, objects) in holders where objects.count > 1 {
                    conflicts.append(Self.conflict(entity, key, values: values, objects: objects, row: nil))
                }
            }
        }
        if !conflicts.isEmpty { throw PostgresDataError.constraintConflict(conflicts) }
    }

    /// The conflicts behind a save the database refused on a unique key (merge policy
    /// `error`): the rows holding the key values of the save's new and changed objects, read
    /// after the failed transaction. Nil when `error` is not such a refusal or no row holds
    /// them any more.
    func constraintConflicts(behind error: any Error) async throws -> [ConstraintConflict]? {
        guard case PostgresDataError.constraintViolation(_, let name, let underlying) = error,
              underlying.sqlState?.rawValue == "23505" else { return nil }
        for (entity, objects) in objectsWithUniqueKeys() {
            guard let key = entity.uniqueKeys.first(where: { $0.name == name }) else { continue }
            var candidates: [(ManagedObject, [AttributeValue])] = []
            for object in objects {
                // A key holding a new object's temporary ID cannot be held by any row.
                guard let values = Self.values(of: key, in: object),
                      !values.contains(where: { if case .object(let id) = $0 { id.isTemporaryID } else { false } }) else { continue }
                candidates.append((object, values))
            }
            guard !candidates.isEmpty else { return nil }
            let lookup = try UniqueRowLookup(entity, key: key, candidates: candidates.map(\.1))
            let coordinator = persistentStoreCoordinator
            let rows = try await store { _ in try await coordinator.rowsHolding(lookup, entity: entity) }
            let conflicts = rows.compactMap { candidate, rowKey, snapshot -> ConstraintConflict? in
                let (object, values) = candidates[candidate]
                guard object.objectID.primaryKey != rowKey else { return nil }
                return Self.conflict(entity, key, values: values, objects: [object],
                                     row: (ManagedObjectID(entity: entity, primaryKey: rowKey), snapshot))
            }
            return conflicts.isEmpty ? nil : conflicts
        }
        return nil
    }

    /// The inserted and updated objects of entities with unique keys, by entity.
    private func objectsWithUniqueKeys() -> [(EntityDescription, [ManagedObject])] {
        guard persistentStoreCoordinator.managedObjectModel.hasUniqueKeys else { return [] }
        var objects: [ManagedObject] = []
        for object in insertedSet.values where !object.entity.uniqueKeys.isEmpty { objects.append(object) }
        for object in updatedSet.values where !object.entity.uniqueKeys.isEmpty { objects.append(object) }
        return SavePlan.grouped(objects, by: \.entity)
    }

    /// The object's values of `key`; nil when one is NULL (NULLs never conflict).
    private static func values(of key: UniqueKey, in object: ManagedObject) -> [AttributeValue]? {
        let values = key.indices.map { object.values[$0] }
        return values.contains(where: \.isNull) ? nil : values
    }

    private static func conflict(_ entity: EntityDescription, _ key: UniqueKey, values: [AttributeValue], objects: [ManagedObject],
                                 row: (ManagedObjectID, RowSnapshot)?) -> ConstraintConflict {
        let names = key.indices.map { entity.properties[$0].name }
        return ConstraintConflict(
            entityName: entity.name, constraint: names, constraintName: key.name,
            constraintValues: Dictionary(zip(names, values), uniquingKeysWith: { first, _ in first }),
            conflictingObjectIDs: objects.map(\.objectID), databaseObjectID: row?.0,
            databaseValues: row.map { _, snapshot in
                Dictionary(entity.columnIndices.map { (entity.properties[$0].name, snapshot.values[$0]) }, uniquingKeysWith: { first, _ in first })
            })
    }

    /// New objects the save resolved to existing rows: each takes its row's key (its
    /// allocated key was never used), and an object the context held for that row before
    /// leaves the context. Returns the objects with the row as the save left it.
    func adoptUpsertedRows(_ rows: [UpsertedRow]) -> [(ManagedObject, RowSnapshot)] {
        guard !rows.isEmpty else { return [] }
        var byAllocatedID: [ManagedObjectID: (object: ManagedObject, position: Int)] = [:]
        let inserted = insertedSet
        inserted.forEachPosition { position, object in
            let key = inserted.allocatedKey(at: position)
            guard key != 0, object.objectID.isTemporaryID, !object.entity.uniqueKeys.isEmpty else { return }
            byAllocatedID[ManagedObjectID(entity: object.entity, primaryKey: key)] = (object, position)
        }
        var adopted: [(ManagedObject, RowSnapshot)] = []
        for row in rows {
            guard let (object, position) = byAllocatedID[ManagedObjectID(entity: row.entity, primaryKey: row.allocatedKey)] else { continue }
            if let previous = registered[ManagedObjectID(entity: row.entity, primaryKey: row.key)], previous !== object {
                detach(previous)
            }
            insertedSet.setAllocatedKey(row.key, at: position)
            adopted.append((object, row.snapshot))
        }
        return adopted
    }
}
