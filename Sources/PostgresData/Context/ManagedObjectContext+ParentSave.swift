import PostgresClient

/// A child context's save: its changes move into the parent, which saves them later.
extension ManagedObjectContext {
    /// Copies the inserted, updated and deleted objects into `parent` (on its queue), then
    /// makes this context's changes committed; nothing reaches the database.
    ///
    /// Core Data equivalent: `save()` of a context whose `parent` is set.
    func save(into parent: ManagedObjectContext) throws {
        struct Change {
            var id: ManagedObjectID
            var type: ManagedObject.Type
            var values: [AttributeValue]
            var changed: [Int]
            var relationships: [Int: [ManagedObjectID]]
        }
        func change(_ object: ManagedObject, all: Bool) -> Change {
            var relationships: [Int: [ManagedObjectID]] = [:]
            for (index, set) in object.relationshipSets where !set.added.isEmpty || !set.removed.isEmpty || set.order != nil {
                if case .joinTable = object.entity.storage(of: index) {
                    relationships[index] = relatedIDs(of: object, at: index)
                } else if set.order != nil {
                    relationships[index] = relatedIDs(of: object, at: index)  // An order the parent takes.
                }
            }
            let changed = all ? object.entity.columnIndices : object.entity.columnIndices.filter(object.changedProperties.contains)
            return Change(id: object.objectID, type: type(of: object), values: object.values.array, changed: changed,
                          relationships: relationships)
        }
        let inserted = insertedSet.values.map { change($0, all: true) }
        let updated = updatedSet.values.map { change($0, all: false) }
        let deleted = deletedSet.values.map(\.objectID)
        try parent.performAndWait { () throws in
            for change in inserted {
                let object = change.type.init(entity: change.id.entity, insertInto: nil)
                object.objectID = change.id
                object.values = PropertyValues(change.values)
                parent.insert(object)
            }
            for change in updated {
                let object = try parent.existingObject(with: change.id)
                for index in change.changed { object.setPrimitiveValue(change.values[index], at: index) }
            }
            for change in inserted + updated {
                let object = parent.object(with: change.id)
                for (index, ids) in change.relationships {
                    try parent.setRelatedObjects(ids.map { parent.object(with: $0) }, of: object, at: index)
                }
            }
            for id in deleted { parent.delete(parent.object(with: id)) }
        }
        let insertedObjects = Array(insertedSet.values)
        let updatedObjects = Array(updatedSet.values)
        let deletedObjects = Array(deletedSet.values)
        rebaseRelationshipSets()
        for object in insertedObjects + updatedObjects {
            object.snapshot = RowSnapshot(values: object.values, version: object.snapshot?.version ?? 0)
            object.isInsertedStorage = false
            object.changedProperties.removeAll()
        }
        for object in deletedObjects {
            registered.remove(object.objectID)
            object.managedObjectContext = nil
        }
        insertedSet = [:]
        updatedSet = [:]
        deletedSet = [:]
        pendingChanges.removeAll()
        didSave(ContextDidSave(inserted: inserted.map(\.id), updated: updated.map(\.id), deleted: deleted, contextName: name))
    }
}
