import Foundation

/// Core Data's key-based primitive access and relationship introspection.
extension ManagedObject {
    /// The stored value of the property called `key` without the accessors' work: an
    /// attribute's value, or a to-one relationship's destination ID (`.object(id)`) when this
    /// row holds the foreign key; nil for another relationship. An unknown key returns nil and
    /// records ``PostgresDataError/unknownKey(_:entity:known:)``, thrown by the next save
    /// (a key may come from a request).
    ///
    /// Core Data equivalent: `primitiveValue(forKey:)`.
    public func primitiveValue(forKey key: String) -> AttributeValue? {
        guard let index = indexRecordingUnknown(key), entity.columnIndices.contains(index) else { return nil }
        return primitiveValue(at: index)
    }

    /// Sets the stored value of the property called `key` (an attribute, or a to-one
    /// relationship held by this row, as `.object(id)`), recording the change; throws for an
    /// unknown key, a relationship stored elsewhere, or a value of the wrong type.
    ///
    /// Core Data equivalent: `setPrimitiveValue(_:forKey:)`.
    public func setPrimitiveValue(_ value: AttributeValue, forKey key: String) throws {
        guard let index = entity.propertyIndex(named: key) else {
            throw PostgresDataError.unknownKey(key, entity: entity.name, known: entity.properties.map(\.name))
        }
        switch entity.properties[index] {
        case .attribute(let attribute):
            // nil is accepted even where the model requires a value: the save's validation says so.
            guard value.isNull || value.fits(attribute.attributeType) else {
                throw PostgresDataError.typeMismatch(key: key, entity: entity.name, expected: attribute.attributeType, actual: value.typeName)
            }
        case .relationship(let relationship):
            guard entity.columnIndices.contains(index) else {
                throw PostgresDataError.invalidRequest("\(entity.name).\(key) is stored in the related rows, not in this one: set it with setValue(_:forKey:)")
            }
            if case .object(let id) = value, id.entity.name != relationship.destinationEntityName {
                throw PostgresDataError.typeMismatch(key: key, entity: entity.name, expected: nil,
                                                      actual: "an ID of \(id.entity.name) (expected one of \(relationship.destinationEntityName))")
            }
            guard value.isNull || { if case .object = value { true } else { false } }() else {
                throw PostgresDataError.typeMismatch(key: key, entity: entity.name, expected: nil, actual: value.typeName)
            }
        }
        setPrimitiveValue(value, at: index)
    }

    /// True when the object has unsaved changes to its stored properties: it is inserted or
    /// deleted, or an attribute or relationship changed.
    ///
    /// Core Data equivalent: `hasPersistentChangedValues` (PostgresData has no transient
    /// properties that the context tracks, so it agrees with ``hasChanges``).
    public var hasPersistentChangedValues: Bool { hasChanges }

    /// The IDs the relationship called `name` points at, as this context sees them, without
    /// making objects of them (a to-many relationship not loaded yet is read once, by key).
    /// Throws for an unknown key or an attribute.
    ///
    /// Core Data equivalent: `objectIDs(forRelationshipNamed:)`.
    public func objectIDs(forRelationshipNamed name: String) throws -> [ManagedObjectID] {
        let index = try relationshipIndex(named: name)
        guard let context = managedObjectContext else { throw PostgresDataError.noContext(objectID) }
        return context.relatedIDs(of: self, at: index)
    }

    /// True when reading the relationship called `name` would need the database: a to-one
    /// whose destination is a fault (or not registered), or a to-many not loaded yet. Throws
    /// for an unknown key or an attribute.
    ///
    /// Core Data equivalent: `hasFault(forRelationshipNamed:)`.
    public func hasFault(forRelationshipNamed name: String) throws -> Bool {
        let index = try relationshipIndex(named: name)
        if isFaultStorage { return true }
        switch entity.storage(of: index) {
        case .foreignKey:
            guard case .object(let id) = values[index] else { return false }
            return managedObjectContext?.registeredObject(for: id)?.isFault ?? true
        case .inverseForeignKey, .joinTable:
            return isInsertedStorage ? false : relationshipSets[index] == nil
        }
    }

    private func relationshipIndex(named name: String) throws -> Int {
        guard let index = entity.propertyIndex(named: name) else {
            throw PostgresDataError.unknownKey(name, entity: entity.name, known: entity.properties.map(\.name))
        }
        guard case .relationship = entity.properties[index] else {
            throw PostgresDataError.invalidRequest("\(entity.name).\(name) is an attribute, not a relationship")
        }
        return index
    }
}
