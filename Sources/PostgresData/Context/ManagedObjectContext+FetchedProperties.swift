extension ManagedObjectContext {
    /// How many owners one query loads a fetched property for.
    static let fetchedPropertyBatch = 1_000

    /// The objects of `owner`'s fetched property `name`, loaded on first use (see
    /// ``FetchedPropertyDescription``) and cached until the owner is refreshed.
    func fetchedObjects(of owner: ManagedObject, property name: String) throws -> [ManagedObject] {
        assertOnQueue()
        guard let property = owner.entity.fetchedProperties.first(where: { $0.name == name }) else {
            throw PostgresDataError.unknownKey(name, entity: owner.entity.name, known: owner.entity.fetchedProperties.map(\.name))
        }
        guard owner.objectID.primaryKey != nil else { return [] }
        if fetchedPropertyValues[owner.objectID]?[name] == nil {
            try BlockingBridge.run { try await self.loadFetchedProperty(property, for: owner) }
        }
        return (fetchedPropertyValues[owner.objectID]?[name] ?? []).map { object(with: $0) }
    }

    /// Loads `property` for `owner` and for up to ``fetchedPropertyBatch`` other registered
    /// objects of its entity that lack it, in one query.
    private func loadFetchedProperty(_ property: FetchedPropertyDescription, for owner: ManagedObject) async throws {
        guard let key = owner.objectID.primaryKey else { return }
        var owners = [key]
        for object in registered.objects where owners.count < Self.fetchedPropertyBatch {
            guard object.entity === owner.entity, object !== owner, let other = object.objectID.primaryKey,
                  fetchedPropertyValues[object.objectID]?[property.name] == nil else { continue }
            owners.append(other)
        }
        let coordinator = persistentStoreCoordinator
        guard let destination = coordinator.managedObjectModel.entitiesByName[property.destinationEntityName] else {
            throw PostgresDataError.invalidModel(["\(owner.entity.name).\(property.name) fetches entity \"\(property.destinationEntityName)\", which is not in the model"])
        }
        let plan = try FetchedPropertyPlan(property, of: owner.entity, destination: destination, owners: owners)
        let rows = try await store { access in
            try await coordinator.fetchOwnedSnapshots(sql: plan.sql, bindings: plan.bindings, entity: destination, access: access)
        }
        let objects = register(rows.map { ($0.key, $0.snapshot) }, entity: destination)
        var byOwner: [Int64: [ManagedObjectID]] = [:]
        for (row, object) in zip(rows, objects) { byOwner[row.owner, default: []].append(object.objectID) }
        for key in owners {
            fetchedPropertyValues[ManagedObjectID(entity: owner.entity, primaryKey: key), default: [:]][property.name] = byOwner[key] ?? []
        }
    }
}

extension ManagedObject {
    /// The objects of the fetched property `key` (see ``FetchedPropertyDescription``), loaded
    /// on first use and cached until the object is refreshed. `value(forKey:)` returns the
    /// same array.
    ///
    /// Core Data equivalent: reading a fetched property with `value(forKey:)`.
    public func fetchedObjects(forKey key: String) throws -> [ManagedObject] {
        guard let context = managedObjectContext else { throw PostgresDataError.noContext(objectID) }
        return try context.fetchedObjects(of: self, property: key)
    }

    /// Reads a fetched property of an `@Entity` class (`@Fetched`); a store error is
    /// recorded for the enclosing block or the next save to throw, and reads as no objects.
    public final func _$fetched<Destination: ManagedObject>(_ name: String) -> [Destination] {
        guard let context = managedObjectContext else { return [] }
        do {
            return try context.fetchedObjects(of: self, property: name).compactMap { $0 as? Destination }
        } catch {
            context.recordingErrors { throw error }
            return []
        }
    }
}
