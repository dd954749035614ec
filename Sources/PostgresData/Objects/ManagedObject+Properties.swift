import Logging
import Foundation

extension ManagedObject {
    // MARK: Key-value coding (generic code)

    /// The value of the property called `key`: an attribute's value, a to-one relationship's
    /// object, or a to-many relationship's `Set<ManagedObject>`; `nil` for NULL.
    ///
    /// Core Data equivalent: `value(forKey:)`, which raises for an unknown key; this one
    /// returns nil and records ``PostgresDataError/unknownKey(_:entity:known:)``, thrown by the
    /// context's next save (a key may come from a request: it must not stop the program).
    /// Use ``EntityDescription/propertyIndex(named:)`` to check first, or the throwing
    /// ``setValue(_:forKey:)`` to set.
    public func value(forKey key: String) -> Any? {
        if entity.propertyIndex(named: key) == nil, let indices = entity.compositeIndices(named: key) {
            // A composite attribute: its elements by name, as Core Data gives them.
            var elements: [String: Any] = [:]
            for index in indices {
                let name = entity.properties[index].name
                elements[String(name.dropFirst(key.count + 1))] = primitiveValue(at: index).anyValue ?? NSNull()
            }
            return elements
        }
        if entity.propertyIndex(named: key) == nil, entity.fetchedProperties.contains(where: { $0.name == key }) {
            let objects: [ManagedObject] = _$fetched(key)
            return objects
        }
        guard let index = indexRecordingUnknown(key) else { return nil }
        switch entity.properties[index] {
        case .attribute:
            return primitiveValue(at: index).anyValue
        case .relationship(let relationship):
            guard let context = managedObjectContext else { return nil }
            if relationship.isToMany { return Set(context.relatedObjects(of: self, at: index)) }
            return context.relatedObjects(of: self, at: index).first
        }
    }

    /// The index of the property called `key`; nil for an unknown key, which is recorded as
    /// ``PostgresDataError/unknownKey(_:entity:known:)`` for the context's next save to throw.
    func indexRecordingUnknown(_ key: String) -> Int? {
        if let index = entity.propertyIndex(named: key) { return index }
        let error = PostgresDataError.unknownKey(key, entity: entity.name, known: entity.properties.map(\.name))
        managedObjectContext?.recordingErrors { throw error }
        return nil
    }

    /// Sets the property called `key`, checking the key and the value's type.
    ///
    /// Core Data equivalent: `setValue(_:forKey:)`, which raises for an unknown key; this one
    /// throws ``PostgresDataError`` naming the key (and the entity's keys) or the types.
    /// Relationships take a ``ManagedObject`` (to-one), or a `Set`/`Array` of them (to-many).
    public func setValue(_ value: Any?, forKey key: String) throws {
        guard let index = entity.propertyIndex(named: key) else {
            throw PostgresDataError.unknownKey(key, entity: entity.name, known: entity.properties.map(\.name))
        }
        switch entity.properties[index] {
        case .attribute(let attribute):
            if let derivation = attribute.derivationExpression {
                throw PostgresDataError.invalidRequest("\(entity.name).\(key) is derived (\(derivation)); the database computes it, so it cannot be set")
            }
            guard let converted = AttributeValue.converting(value, to: attribute.attributeType),
                  converted.fits(attribute.attributeType) else {
                throw PostgresDataError.typeMismatch(key: key, entity: entity.name, expected: attribute.attributeType,
                                                      actual: value.map { "\(type(of: $0))" } ?? "nil")
            }
            setPrimitiveValue(converted, at: index)
        case .relationship(let relationship):
            guard let context = managedObjectContext else { throw PostgresDataError.noContext(objectID) }
            if relationship.isToMany {
                let objects: [ManagedObject]
                if let set = value as? Set<ManagedObject> { objects = Array(set) }
                else if let array = value as? [ManagedObject] { objects = array }
                else if value == nil { objects = [] }
                else {
                    throw PostgresDataError.typeMismatch(key: key, entity: entity.name, expected: nil,
                                                          actual: "\(type(of: value!)) (expected a Set of \(relationship.destinationEntityName))")
                }
                try context.setRelatedObjects(objects, of: self, at: index)
            } else {
                guard value == nil || value is ManagedObject else {
                    throw PostgresDataError.typeMismatch(key: key, entity: entity.name, expected: nil,
                                                          actual: "\(type(of: value!)) (expected a \(relationship.destinationEntityName))")
                }
                try context.setRelatedObjects((value as? ManagedObject).map { [$0] } ?? [], of: self, at: index)
            }
        }
    }

    /// The keys and new values of the properties changed since the object was fetched or
    /// saved. Core Data equivalent: `changedValues()`.
    public func changedValues() -> [String: Any] {
        var result: [String: Any] = [:]
        let changed = isInsertedStorage ? Array(entity.columnIndices) : Array(changedProperties)
        for index in changed {
            result[entity.properties[index].name] = values[index].anyValue ?? NSNull()
        }
        return result
    }

    /// The keys and *old* values of the attributes and to-one relationships changed since
    /// the context last processed its pending changes (the last objects-did-change
    /// notification). The context keeps each object's values at the end of each event from
    /// the first call on; until then, and after a save, changes are measured from the
    /// committed values.
    ///
    /// Core Data equivalent: `changedValuesForCurrentEvent()`.
    public func changedValuesForCurrentEvent() -> [String: Any] {
        guard let context = managedObjectContext, !isFaultStorage else { return [:] }
        if context.eventBaselines == nil { context.eventBaselines = [:] }
        let baseline = context.eventBaselines?[objectID] ?? snapshot?.values ?? PropertyValues(entity.defaultValues)
        let current = values
        var result: [String: Any] = [:]
        for index in entity.columnIndices where current[index] != baseline[index] {
            result[entity.properties[index].name] = baseline[index].anyValue ?? NSNull()
        }
        return result
    }

    /// The committed values (as last fetched or saved) of `keys`, or of every attribute and
    /// to-one relationship when nil. Core Data equivalent: `committedValues(forKeys:)`.
    public func committedValues(forKeys keys: [String]?) -> [String: Any] {
        willAccessValues()
        let names = keys ?? entity.properties.enumerated().filter { !entity.derivedRelationshipIndices.contains($0.offset) }.map(\.element.name)
        var result: [String: Any] = [:]
        for name in names {
            guard let index = entity.propertyIndex(named: name) else { continue }
            let value = snapshot?.values[index] ?? .null
            result[name] = value.anyValue ?? NSNull()
        }
        return result
    }

    // MARK: Primitive access

    /// The stored value of a property (attributes and foreign-key relationships).
    public func primitiveValue(at index: Int) -> AttributeValue {
        if isFaultStorage {
            willAccessValues()
        } else if let missing = missingProperties, missing.contains(index) {
            // A property a partial fetch did not read: the whole row first.
            willAccessValues()
        }
        return currentValue(at: index)
    }

    /// Sets a stored value and records the change with the context.
    public func setPrimitiveValue(_ value: AttributeValue, at index: Int) {
        willAccessValues()
        if isInsertedStorage {
            // Every value of an inserted object is written; nothing to track (but for the
            // willSave() hooks, which run again on the objects they change).
            withContext { context in
                guard context.hookChanges != nil || context.undoManagerStorage != nil, values[index] != value else { return }
                context.hookChanges?.append(self)
                context.willChangeForUndo(self)
            }
            setOwnValue(value, at: index)
            return
        }
        // A fetched object's first change (the usual one): one copy of its values.
        if let changed = changeSnapshotValue(value, at: index, willChange: { withContext { $0.willChangeForUndo(self) } }) {
            if changed { withContext { $0.didChange(self) } }
            return
        }
        guard currentValue(at: index) != value else { return }
        withContext { $0.willChangeForUndo(self) }
        setOwnValue(value, at: index)
        if let snapshot, snapshot.value(at: index) == value {
            changedProperties.remove(index)
        } else {
            changedProperties.insert(index)
        }
        withContext { $0.didChange(self) }
    }

    // MARK: Accessors generated by @Entity

    /// Reads an attribute; called by `@Entity`'s generated getters.
    @inlinable
    public final func _$attribute<Value: PersistentAttributeValue>(_ index: Int, as type: Value.Type) -> Value {
        Value(attributeValue: primitiveValue(at: index))
    }

    /// Writes an attribute; called by `@Entity`'s generated setters.
    @inlinable
    public final func _$setAttribute<Value: PersistentAttributeValue>(_ index: Int, _ value: Value) {
        setPrimitiveValue(value.attributeValue, at: index)
    }

    /// Reads a `Codable` attribute stored as JSON.
    @_disfavoredOverload
    public final func _$attribute<Value: Codable>(_ index: Int, as type: Value.Type) -> Value {
        let data: Data = if case .json(let data) = primitiveValue(at: index) { data } else { Data("null".utf8) }
        if let value = try? JSONDecoder.attributes.decode(Value.self, from: data) { return value }
        // JSON another program wrote, which this type cannot read: the error is recorded (the
        // enclosing block or the next save throws it) and the attribute reads as nil or its
        // default — the model requires one or the other.
        let property = entity.properties[index]
        managedObjectContext?.recordFaultError(.invalidRequest("\(entity.name).\(property.name) of \(objectID) holds JSON that does not decode as \(Value.self)"))
        let fallback: Data = if case .json(let data) = property.attribute?.defaultValue { data } else { Data("null".utf8) }
        if let value = try? JSONDecoder.attributes.decode(Value.self, from: fallback) { return value }
        preconditionFailure("\(entity.name).\(property.name): neither its JSON nor its default decodes as \(Value.self); the model checks that it has one")
    }

    /// Writes a `Codable` attribute as JSON.
    @_disfavoredOverload
    public final func _$setAttribute<Value: Codable>(_ index: Int, _ value: Value) {
        do {
            let data = try JSONEncoder.attributes.encode(value)
            setPrimitiveValue(data == Data("null".utf8) ? .null : .json(data), at: index)
        } catch {
            // A value JSON cannot hold (a NaN, say): the attribute keeps its value and the next
            // save throws, naming it.
            let reason = "\(entity.name).\(entity.properties[index].name): this \(Value.self) does not encode as JSON (\(error)); the value was not set"
            if let context = managedObjectContext {
                context.recordingErrors { throw PostgresDataError.invalidRequest(reason) }
            } else {
                Logger(label: "PostgresData").error("\(reason)")
            }
        }
    }

    /// Reads a to-one relationship.
    public final func _$toOne<Destination: ManagedObject>(_ index: Int, as type: Destination.Type) -> Destination? {
        guard let context = managedObjectContext else { return nil }
        return context.relatedObjects(of: self, at: index).first as? Destination
    }

    /// Writes a to-one relationship, maintaining its inverse. A setter cannot throw, so an
    /// illegal assignment (objects of two contexts) changes nothing and the context's next
    /// `save()` throws the error naming both contexts; ``setValue(_:forKey:)`` throws at once.
    public final func _$setToOne<Destination: ManagedObject>(_ index: Int, _ object: Destination?) {
        guard let context = managedObjectContext else {
            return noContextForRelationship(index)
        }
        context.recordingErrors { try context.setRelatedObjects(object.map { [$0] } ?? [], of: self, at: index) }
    }

    /// Reads a to-many relationship.
    public final func _$toMany<Destination: ManagedObject>(_ index: Int, as type: Destination.Type) -> Set<Destination> {
        guard let context = managedObjectContext else { return [] }
        return Set(context.relatedObjects(of: self, at: index).compactMap { $0 as? Destination })
    }

    /// Writes a to-many relationship, maintaining the inverses.
    public final func _$setToMany<Destination: ManagedObject>(_ index: Int, _ objects: Set<Destination>) {
        guard let context = managedObjectContext else {
            return noContextForRelationship(index)
        }
        context.recordingErrors { try context.setRelatedObjects(Array(objects), of: self, at: index) }
    }

    /// Reads an ordered to-many relationship, in its order (an unordered one in key order).
    public final func _$orderedToMany<Destination: ManagedObject>(_ index: Int, as type: Destination.Type) -> [Destination] {
        guard let context = managedObjectContext else { return [] }
        return context.relatedObjects(of: self, at: index).compactMap { $0 as? Destination }
    }

    /// Writes an ordered to-many relationship: its members and their order.
    public final func _$setOrderedToMany<Destination: ManagedObject>(_ index: Int, _ objects: [Destination]) {
        guard let context = managedObjectContext else {
            return noContextForRelationship(index)
        }
        context.recordingErrors { try context.setRelatedObjects(objects, of: self, at: index) }
    }

    /// A relationship set on an object without a context: one never inserted, or one its
    /// context let go (deleted elsewhere, or replaced by the object a save resolved to its
    /// row). Nothing changes and the error is logged: the object is no longer saved anywhere.
    private func noContextForRelationship(_ index: Int) {
        Logger(label: "PostgresData").error("\(entity.name).\(entity.properties[index].name) of \(objectID) was not set: the object is in no context (insert it first; an object its context let go is saved no more)")
    }
}
