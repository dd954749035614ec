extension ManagedObjectContext {
    /// The rows a save must read back for their derived attributes: those it inserts or
    /// updates of entities with derivations, and the owners of every aggregate whose rows
    /// it inserts, moves or deletes (old and new owners alike), by entity.
    func rowsWithMovedDerivations() -> [(EntityDescription, [Int64])] {
        guard persistentStoreCoordinator.managedObjectModel.hasDerivations else { return [] }
        var keys: [EntityDescription: Set<Int64>] = [:]
        func key(_ id: ManagedObjectID) -> Int64? { id.primaryKey ?? allocatedID(for: id)?.primaryKey }
        for object in insertedSet.values where !object.entity.derivations.isEmpty {
            if let key = key(object.objectID) { keys[object.entity, default: []].insert(key) }
        }
        for object in updatedSet.values where !object.entity.derivations.isEmpty {
            if let key = key(object.objectID) { keys[object.entity, default: []].insert(key) }
        }
        // Aggregates fed by a foreign key of another entity, and by a join table.
        var feeds: [(rows: EntityDescription, foreignKey: Int, owner: EntityDescription)] = []
        var links: [(owner: EntityDescription, relationship: Int)] = []
        for owner in persistentStoreCoordinator.managedObjectModel.entities {
            for derivation in owner.derivations.values {
                guard case let .count(relationship) = derivation, case .joinTable = owner.storage(of: relationship) else {
                    switch derivation {
                    case .count(let relationship), .sum(let relationship, _):
                        feeds.append((owner.destination(of: relationship), owner.inverseIndex(of: relationship), owner))
                    case .expression:
                        break
                    }
                    continue
                }
                links.append((owner, relationship))
            }
        }
        if !feeds.isEmpty {
            func noteOwners(of object: ManagedObject, values: [PropertyValues?]) {
                for feed in feeds where feed.rows === object.entity {
                    for case let values? in values {
                        if case .object(let id) = values[feed.foreignKey], let key = key(id) { keys[feed.owner, default: []].insert(key) }
                    }
                }
            }
            for object in insertedSet.values { noteOwners(of: object, values: [object.values]) }
            for object in updatedSet.values { noteOwners(of: object, values: [object.values, object.snapshot?.values]) }
            for object in deletedSet.values { noteOwners(of: object, values: [object.snapshot?.values]) }
        }
        for (owner, relationship) in links {
            let destination = owner.destination(of: relationship)
            let inverse = owner.inverseIndex(of: relationship)
            for object in Array(insertedSet.values) + Array(updatedSet.values) {
                if object.entity === owner, let set = object.relationshipSets[relationship], !set.added.isEmpty || !set.removed.isEmpty,
                   let key = key(object.objectID) {
                    keys[owner, default: []].insert(key)
                }
                if object.entity === destination, let set = object.relationshipSets[inverse] {
                    for id in set.added.union(set.removed) { if let key = key(id) { keys[owner, default: []].insert(key) } }
                }
            }
        }
        return keys.map { ($0.key, $0.value.sorted()) }.sorted { $0.0.name < $1.0.name }
    }

    /// Rows a save read back: registered objects take their derived values and the row's
    /// version; the row cache takes the rows.
    func applyRefreshedRows(_ rows: [(ManagedObjectID, RowSnapshot)]) {
        guard !rows.isEmpty else { return }
        persistentStoreCoordinator.noteCurrentRows(rows.map { ($0.0, $0.1) })
        for (id, row) in rows {
            guard let object = registered[id], !object.isFaultStorage else { continue }
            for index in object.entity.derivations.keys { object.values[index] = row.values[index] }
            object.snapshot = row
        }
    }
}
