import PostgresClient

extension ManagedObjectContext {
    /// The IDs an object's relationship points at, as the context sees it: the committed
    /// ones with this context's unsaved changes applied.
    func relatedIDs(of owner: ManagedObject, at index: Int) -> [ManagedObjectID] {
        let ids = unorderedRelatedIDs(of: owner, at: index)
        // An order given and not saved yet: its members first in that order, then the
        // members added since (at the end).
        guard let order = owner.relationshipSets[index]?.order else { return ids }
        let members = Set(ids)
        let ordered = order.filter(members.contains)
        let placed = Set(ordered)
        return ordered + ids.filter { !placed.contains($0) }
    }

    /// ``relatedIDs(of:at:)`` before an unsaved order is applied.
    private func unorderedRelatedIDs(of owner: ManagedObject, at index: Int) -> [ManagedObjectID] {
        owner.willAccessValues()
        let entity = owner.entity
        switch entity.storage(of: index) {
        case .foreignKey:
            if case .object(let id) = owner.values[index] { return [id] }
            return []
        case .inverseForeignKey:
            let base = loadedBase(of: owner, at: index)
            let destination = entity.destination(of: index)
            let foreignKey = entity.inverseIndex(of: index)
            var result = OrderedSetBuilder(base)
            for object in Array(insertedSet.values) + Array(updatedSet.values) + Array(deletedSet.values)
            where object.entity === destination {
                let pointsHere = object.values[foreignKey] == .object(owner.objectID) && !object.isDeletedStorage
                if pointsHere { result.insert(object.objectID) } else { result.remove(object.objectID) }
            }
            return result.elements
        case .joinTable:
            let base = loadedBase(of: owner, at: index)
            let set = owner.relationshipSets[index] ?? RelationshipSet(ids: base)
            var result = OrderedSetBuilder(set.ids)
            for id in set.removed { result.remove(id) }
            for id in set.added { result.insert(id) }
            return result.elements.filter { registered[$0]?.isDeletedStorage != true }
        }
    }

    /// The objects an object's relationship points at.
    func relatedObjects(of owner: ManagedObject, at index: Int) -> [ManagedObject] {
        var ids = relatedIDs(of: owner, at: index)
        // A relationship to a parent entity: its objects' own entities, read at once.
        if !owner.entity.destination(of: index).subentities.isEmpty {
            ids = (try? concreteIDs(ids)) ?? ids
        }
        return ids.map { object(with: $0) }
    }

    /// The committed IDs of a relationship stored elsewhere, loaded once (a relationship fault).
    private func loadedBase(of owner: ManagedObject, at index: Int) -> [ManagedObjectID] {
        if let set = owner.relationshipSets[index] { return set.ids }
        var ids: [ManagedObjectID] = []
        var positions: [Double]?
        if let parent {
            let ownerID = owner.objectID
            ids = parent.performAndWait {
                guard let parentOwner = try? parent.existingObject(with: ownerID) else { return [] }
                return parent.relatedIDs(of: parentOwner, at: index)
            }
        } else if let key = owner.objectID.primaryKey, !owner.isInsertedStorage {
            let entity = owner.entity
            let destination = entity.destination(of: index)
            let coordinator = persistentStoreCoordinator
            do {
                let rows = try blockingStore { access in try await coordinator.fetchRelatedKeys(entity, relationship: index, owner: key, access: access) }
                ids = rows.map { ManagedObjectID(entity: destination, primaryKey: $0.key) }
                if entity.orderColumn(of: index) != nil { positions = rows.map { $0.position ?? 0 } }
            } catch {
                // As for an object's fault: the error ends the enclosing block (or the next save),
                // the relationship reads as empty meanwhile and is not cached, so the next access
                // asks again.
                let failure = error as? PostgresDataError ?? .invalidRequest("\(error)")
                persistentStoreCoordinator.logger.error("filling the relationship fault \(owner.objectID).\(entity.properties[index].name) failed: \(failure)")
                faultErrors.append(failure)
                return []
            }
        }
        owner.relationshipSets[index] = RelationshipSet(ids: ids, positions: positions)
        return ids
    }

    /// Sets a relationship to `objects` (one or none for to-one), maintaining the inverse.
    func setRelatedObjects(_ objects: [ManagedObject], of owner: ManagedObject, at index: Int) throws {
        assertOnQueue()
        let entity = owner.entity
        let relationship = entity.properties[index].relationship!
        let destination = entity.destination(of: index)
        for object in objects {
            guard object.entity === destination else {
                throw PostgresDataError.typeMismatch(key: relationship.name, entity: entity.name, expected: nil,
                                                      actual: "\(object.entity.name) (expected \(destination.name))")
            }
            guard let context = object.managedObjectContext else { throw PostgresDataError.noContext(object.objectID) }
            guard context === self else {
                throw PostgresDataError.crossContextRelationship(
                    key: relationship.name, object: owner.objectID, objectContext: description,
                    other: object.objectID, otherContext: context.description)
            }
        }
        let inverseIndex = entity.inverseIndex(of: index)
        switch entity.storage(of: index) {
        case .foreignKey:
            let new = objects.first
            if !destination.properties[inverseIndex].relationship!.isToMany, let new {
                // One-to-one: the destination's previous partner lets go of it.
                for partner in relatedObjects(of: new, at: inverseIndex) where partner !== owner {
                    partner.setPrimitiveValue(.null, at: index)
                }
            }
            owner.setPrimitiveValue(new.map { .object($0.objectID) } ?? .null, at: index)
        case .inverseForeignKey:
            let current = relatedObjects(of: owner, at: index)
            let wanted = Set(objects.map(ObjectIdentifier.init))
            for object in current where !wanted.contains(ObjectIdentifier(object)) {
                if object.primitiveValue(at: inverseIndex) == .object(owner.objectID) {
                    object.setPrimitiveValue(.null, at: inverseIndex)
                }
            }
            let currentSet = Set(current.map(ObjectIdentifier.init))
            for object in objects where !currentSet.contains(ObjectIdentifier(object)) {
                try setRelatedObjects([owner], of: object, at: inverseIndex)
            }
        case .joinTable:
            let current = Set(relatedIDs(of: owner, at: index))
            let wanted = Set(objects.map(\.objectID))
            // An implicit inverse (a relationship declared without one) changes no object.
            let mirrored = destination.properties[inverseIndex].relationship?.isImplicitInverse != true
            for id in current.subtracting(wanted) {
                link(owner, at: index, to: id, adding: false)
                if mirrored, let other = registered[id] { link(other, at: inverseIndex, to: owner.objectID, adding: false) }
            }
            for object in objects where !current.contains(object.objectID) {
                link(owner, at: index, to: object.objectID, adding: true)
                if mirrored { link(object, at: inverseIndex, to: owner.objectID, adding: true) }
            }
        }
        if relationship.isOrdered && relationship.isToMany {
            let order = objects.map(\.objectID)
            if relatedIDs(of: owner, at: index) != order {
                willChangeForUndo(owner)
                owner.relationshipSets[index]?.order = order
                didChange(owner)
            }
        }
    }

    /// Adds or removes one join-table link on one side.
    private func link(_ owner: ManagedObject, at index: Int, to id: ManagedObjectID, adding: Bool) {
        _ = loadedBase(of: owner, at: index)
        willChangeForUndo(owner)
        var set = owner.relationshipSets[index]!
        if adding {
            if set.removed.remove(id) == nil, !set.ids.contains(id) { set.added.insert(id) }
        } else {
            if set.added.remove(id) == nil, set.ids.contains(id) { set.removed.insert(id) }
        }
        owner.relationshipSets[index] = set
        didChange(owner)
    }

    /// Applies nullify and cascade rules of a deleted object's relationships.
    func applyDeleteRules(of object: ManagedObject) {
        let entity = object.entity
        for (index, property) in entity.properties.enumerated() {
            guard case .relationship(let relationship) = property else { continue }
            let related = relatedObjects(of: object, at: index)
            guard !related.isEmpty else { continue }
            let inverseIndex = entity.inverseIndex(of: index)
            switch relationship.deleteRule {
            case .cascade:
                for other in related where !other.isDeletedStorage { delete(other) }
            case .nullify:
                for other in related where !other.isDeletedStorage {
                    switch entity.destination(of: index).storage(of: inverseIndex) {
                    case .foreignKey:
                        if other.primitiveValue(at: inverseIndex) == .object(object.objectID) {
                            other.setPrimitiveValue(.null, at: inverseIndex)
                        }
                    case .joinTable:
                        link(other, at: inverseIndex, to: object.objectID, adding: false)
                        link(object, at: index, to: other.objectID, adding: false)
                    case .inverseForeignKey:
                        break  // The deleted object's own foreign key goes with its row.
                    }
                }
            case .deny, .noAction:
                break
            }
        }
    }

    /// Fails when a `deny` relationship of a deleted object still has destinations.
    func validateDeleteRules(of object: ManagedObject) throws {
        let entity = object.entity
        var failures: [ValidationFailure] = []
        for (index, property) in entity.properties.enumerated() {
            guard case .relationship(let relationship) = property, relationship.deleteRule == .deny else { continue }
            let remaining = relatedObjects(of: object, at: index).filter { !$0.isDeletedStorage }
            if !remaining.isEmpty {
                failures.append(ValidationFailure(
                    objectID: object.objectID, key: relationship.name,
                    reason: "cannot be deleted: its delete rule is deny and it still has \(remaining.count) \(relationship.destinationEntityName) object\(remaining.count == 1 ? "" : "s") (\(remaining.prefix(3).map { "\($0.objectID)" }.joined(separator: ", ")))"))
            }
        }
        if !failures.isEmpty { throw PostgresDataError.validation(failures) }
    }
}

/// An ordered set of IDs with cheap membership, for relationship views.
struct OrderedSetBuilder {
    private(set) var elements: [ManagedObjectID]
    private var members: Set<ManagedObjectID>

    init(_ elements: [ManagedObjectID]) {
        self.elements = elements
        self.members = Set(elements)
    }

    mutating func insert(_ id: ManagedObjectID) {
        if members.insert(id).inserted { elements.append(id) }
    }

    mutating func remove(_ id: ManagedObjectID) {
        if members.remove(id) != nil { elements.removeAll { $0 == id } }
    }
}
