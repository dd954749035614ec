extension ManagedObjectContext {
    /// The positions a save writes for ordered to-many relationships: for each owner whose
    /// order or members changed (and whose order the context knows), new positions that keep
    /// as many old ones as the order allows (``OrderPositions``); rows that joined an owner
    /// whose order it never read go last. Returns the writes, the rows they move by entity
    /// (to read back their versions), and each owner's positions, in its new order.
    func orderChanges() -> (writes: [SavePlan.OrderWrite], moved: [(EntityDescription, [Int64])],
                            positions: [ObjectIdentifier: [Int: [Double]]]) {
        var writes: [SavePlan.OrderWrite] = []
        var moved: [(EntityDescription, [Int64])] = []
        var positions: [ObjectIdentifier: [Int: [Double]]] = [:]
        guard persistentStoreCoordinator.managedObjectModel.hasOrderedRelationships else { return (writes, moved, positions) }
        func key(_ id: ManagedObjectID) -> Int64? { id.primaryKey ?? allocatedID(for: id)?.primaryKey }
        let changed = Array(insertedSet.values) + Array(updatedSet.values)
        for entity in persistentStoreCoordinator.managedObjectModel.entities {
            for index in entity.relationshipIndices {
                guard let (table, column) = entity.orderColumn(of: index) else { continue }
                var owners: [ManagedObject] = []
                var seen: Set<ObjectIdentifier> = []
                func consider(_ owner: ManagedObject) {
                    if seen.insert(ObjectIdentifier(owner)).inserted { owners.append(owner) }
                }
                for object in changed where object.entity === entity {
                    guard let set = object.relationshipSets[index] else {
                        if object.isInsertedStorage { consider(object) }
                        continue
                    }
                    if object.isInsertedStorage || set.order != nil || !set.added.isEmpty || !set.removed.isEmpty { consider(object) }
                }
                var appended: [Int64] = []
                let destination = entity.destination(of: index)
                let inverse = entity.inverseIndex(of: index)
                if case .inverseForeignKey = entity.storage(of: index) {
                    // Rows whose foreign key now names an owner.
                    for object in changed where object.entity === destination {
                        guard case .object(let ownerID) = object.values[inverse],
                              object.isInsertedStorage || object.snapshot?.values[inverse] != object.values[inverse] else { continue }
                        if let owner = registered[ownerID], owner.isInsertedStorage || owner.relationshipSets[index] != nil {
                            consider(owner)
                        } else if let member = key(object.objectID) {
                            appended.append(member)
                        }
                    }
                }
                var keys: [Int64] = []
                var values: [Double] = []
                var ownerKeys: [Int64] = []
                for owner in owners where !owner.isDeletedStorage {
                    let order = relatedIDs(of: owner, at: index)
                    let set = owner.relationshipSets[index]
                    var known: [ManagedObjectID: Double] = [:]
                    if let set, let old = set.positions, old.count == set.ids.count {
                        for (id, position) in zip(set.ids, old) { known[id] = position }
                    }
                    let old = order.map { known[$0] }
                    let new = OrderPositions.assign(old)
                    positions[ObjectIdentifier(owner), default: [:]][index] = new
                    guard let ownerKey = key(owner.objectID) else { continue }
                    for (position, id) in order.enumerated() where old[position] != new[position] {
                        guard let member = key(id) else { continue }
                        keys.append(member)
                        values.append(new[position])
                        ownerKeys.append(ownerKey)
                    }
                }
                switch entity.storage(of: index) {
                case .inverseForeignKey:
                    if !keys.isEmpty { writes.append(.rows(table: table, column: column, keys: keys, positions: values)) }
                    if !appended.isEmpty {
                        writes.append(.append(table: table, column: column, foreignKey: destination.columnName(of: inverse), keys: appended))
                    }
                    if !keys.isEmpty || !appended.isEmpty { moved.append((destination, keys + appended)) }
                case .joinTable(let join):
                    if !keys.isEmpty {
                        writes.append(.links(table: table, column: column, ownerColumn: join.sourceColumn, memberColumn: join.destinationColumn,
                                             owners: ownerKeys, members: keys, positions: values))
                    }
                case .foreignKey:
                    break
                }
            }
        }
        return (writes, moved, positions)
    }
}
