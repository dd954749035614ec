import PostgresClient

extension ManagedObjectContext {
    /// `ids` with each ID of an entity that has sub-entities (a foreign key to a parent
    /// entity names no sub-entity) replaced by the ID of its row's own entity, read in one
    /// query for those not registered; IDs of unknown rows are kept as they are.
    func concreteIDs(_ ids: [ManagedObjectID]) throws -> [ManagedObjectID] {
        var unknown: [EntityDescription: [Int64]] = [:]
        for id in ids where !id.entity.subentities.isEmpty && !id.isTemporaryID && registered[id] == nil {
            if let key = id.primaryKey { unknown[id.entity, default: []].append(key) }
        }
        guard !unknown.isEmpty else { return ids }
        var resolved: [ManagedObjectID: ManagedObjectID] = [:]
        for (entity, keys) in unknown {
            let rows = try entityNames(of: entity, keys: keys)
            for (key, name) in rows {
                guard let concrete = entity.selfAndDescendants.first(where: { $0.name == name }) else { continue }
                resolved[ManagedObjectID(entity: entity, primaryKey: key)] = ManagedObjectID(entity: concrete, primaryKey: key)
            }
        }
        return ids.map { resolved[$0] ?? $0 }
    }

    /// The entity name of each row `keys` of `entity`'s hierarchy table.
    private func entityNames(of entity: EntityDescription, keys: [Int64]) throws -> [(Int64, String)] {
        let sql = "SELECT \"id\", \(quoteIdentifier(EntityDescription.discriminatorColumn)) FROM \(quoteIdentifier(entity.tableName)) WHERE \"id\" = ANY($1)"
        let bindings = try PostgresBindings(keys)
        let coordinator = persistentStoreCoordinator
        return try blockingStore { access in
            try await coordinator.withReadConnection(access) { connection in
                try await connection.query(sql, bindings: bindings).map { (try $0.decode(Int64.self, at: 0), try $0.decode(String.self, at: 1)) }
            }
        }
    }

    /// The objects of a fetch of `entity` with its sub-entities: keys and entity names in the
    /// request's order first, then each entity's rows by key (or faults), in that order.
    func fetchHierarchy<Result>(_ request: FetchRequest<Result>, entity: EntityDescription, excluding excluded: [Int64],
                                faultsOnly: Bool) async throws -> [ManagedObject] {
        let column = "t.\(quoteIdentifier(EntityDescription.discriminatorColumn))"
        let (sql, bindings) = try request.sql(for: entity, columns: "t.\"id\", \(column)", excluding: excluded)
        activeSpan?.noteQuery(sql)
        let coordinator = persistentStoreCoordinator
        let rows = try await store { access in
            try await coordinator.withReadConnection(access) { connection in
                try await connection.query(sql, bindings: bindings).map { (try $0.decode(Int64.self, at: 0), try $0.decode(String.self, at: 1)) }
            }
        }
        let entities = Dictionary(entity.selfAndDescendants.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let ids = rows.compactMap { key, name in entities[name].map { ManagedObjectID(entity: $0, primaryKey: key) } }
        if !faultsOnly {
            for (concrete, group) in SavePlan.grouped(ids, by: \.entity) {
                let missing = group.filter { registered[$0].map(\.isFaultStorage) ?? true }.compactMap(\.primaryKey)
                guard !missing.isEmpty else { continue }
                let snapshots = try await store { access in try await coordinator.fetchSnapshots(concrete, keys: missing, access: access) }
                _ = register(snapshots, entity: concrete)
            }
        }
        return ids.map { object(with: $0) }
    }
}
