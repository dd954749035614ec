import Foundation

// Support for the code `@Entity` generates. Not for direct use.
extension ManagedObject {
    /// ``EntityDescription`` as the generated code names it: a member of the class, found
    /// through inheritance, so that a file importing a module with a type named
    /// `PostgresData` (PostgresNIO has one) still compiles — `PostgresData.EntityDescription`
    /// would be looked up in that type.
    public typealias _$EntityDescription = EntityDescription
    public typealias _$AttributeValue = AttributeValue

    /// An attribute property of an `@Entity` class.
    public static func _$property<Value: PersistentAttributeValue>(
        _ name: String, _ type: Value.Type, default defaultValue: Value? = nil, _ options: AttributeOption...,
        minValue: Double? = nil, maxValue: Double? = nil, minLength: Int? = nil, maxLength: Int? = nil,
        regularExpression: String? = nil, validation: String? = nil, derived: String? = nil, columnName: String? = nil
    ) -> PropertyDescription {
        var attribute = AttributeDescription(
            name: name, valueType: Value.self, defaultValue: defaultValue, minValue: minValue, maxValue: maxValue,
            minLength: minLength, maxLength: maxLength, regularExpression: regularExpression,
            isIndexed: options.contains(.indexed), isUnique: options.contains(.unique), columnName: columnName)
        attribute.validationPredicates = validation.map { [$0] } ?? []
        attribute.derivationExpression = derived
        attribute.preservesValueInHistoryOnDeletion = options.contains(.preservesValueInHistoryOnDeletion)
        return .attribute(attribute)
    }

    /// An attribute of an `@Entity` class declared only by its default value (`var done = false`).
    public static func _$property<Value: PersistentAttributeValue>(
        _ name: String, default defaultValue: Value, _ options: AttributeOption...,
        minValue: Double? = nil, maxValue: Double? = nil, minLength: Int? = nil, maxLength: Int? = nil,
        regularExpression: String? = nil, validation: String? = nil, derived: String? = nil, columnName: String? = nil
    ) -> PropertyDescription {
        var description = _$property(name, Value.self, default: defaultValue, minValue: minValue, maxValue: maxValue,
                                     minLength: minLength, maxLength: maxLength, regularExpression: regularExpression,
                                     validation: validation, derived: derived, columnName: columnName)
        if case .attribute(var attribute) = description {
            attribute.isIndexed = options.contains(.indexed)
            attribute.isUnique = options.contains(.unique)
            attribute.preservesValueInHistoryOnDeletion = options.contains(.preservesValueInHistoryOnDeletion)
            description = .attribute(attribute)
        }
        return description
    }

    /// A composite attribute (a `@Composite` struct): its elements, with the default's values.
    public static func _$property<Value: CompositeAttributeValue>(
        _ name: String, _ type: Value.Type, default defaultValue: Value? = nil, columnName: String? = nil
    ) -> PropertyDescription {
        var elements = Value.compositeElements
        if let defaults = defaultValue?.compositeValues {
            for index in elements.indices where index < defaults.count { elements[index].defaultValue = defaults[index] }
        }
        var attribute = AttributeDescription(name: name, type: .codable, columnName: columnName)
        attribute.compositeElements = elements
        return .attribute(attribute)
    }

    /// A composite attribute declared only by its default value (`var address = Address()`).
    public static func _$property<Value: CompositeAttributeValue>(_ name: String, default defaultValue: Value,
                                                                    columnName: String? = nil) -> PropertyDescription {
        _$property(name, Value.self, default: defaultValue, columnName: columnName)
    }

    /// A `Codable` attribute (stored as `jsonb`).
    @_disfavoredOverload
    public static func _$property<Value: Codable>(
        _ name: String, _ type: Value.Type, default defaultValue: Value? = nil, _ options: AttributeOption...,
        columnName: String? = nil
    ) -> PropertyDescription {
        .attribute(AttributeDescription(name: name, valueType: Value.self, defaultValue: defaultValue,
                                        isIndexed: options.contains(.indexed), isUnique: options.contains(.unique),
                                        columnName: columnName))
    }

    /// An ordered to-many relationship (an array); `ordered: false` keeps it unordered, read
    /// in key order.
    public static func _$property<Destination: ManagedObject>(
        _ name: String, _ type: [Destination].Type, deleteRule: DeleteRule = .nullify, inverse: String = "",
        minCount: Int = 0, maxCount: Int = 0, ordered: Bool = true
    ) -> PropertyDescription {
        .relationship(RelationshipDescription(name: name, destination: "\(Destination.self)", inverse: inverse,
                                              toMany: true, deleteRule: deleteRule, minCount: minCount, maxCount: maxCount,
                                              isOrdered: ordered))
    }

    /// A fetched property of an `@Entity` class (`@Fetched`).
    public static func _$fetchedProperty<Destination: ManagedObject>(
        _ name: String, _ type: [Destination].Type, _ predicate: String, sortDescriptors: [FetchSortDescriptor] = []
    ) -> FetchedPropertyDescription {
        FetchedPropertyDescription(name: name, destinationEntityName: "\(Destination.self)", predicateFormat: predicate,
                                   sortDescriptors: sortDescriptors)
    }

    /// An optional to-one relationship.
    public static func _$property<Destination: ManagedObject>(
        _ name: String, _ type: Destination?.Type, deleteRule: DeleteRule = .nullify, inverse: String = "",
        minCount: Int = 0, maxCount: Int = 0
    ) -> PropertyDescription {
        .relationship(RelationshipDescription(name: name, destination: "\(Destination.self)", inverse: inverse,
                                              deleteRule: deleteRule, isOptional: true))
    }

    /// A required to-one relationship.
    public static func _$property<Destination: ManagedObject>(
        _ name: String, _ type: Destination.Type, deleteRule: DeleteRule = .nullify, inverse: String = "",
        minCount: Int = 0, maxCount: Int = 0
    ) -> PropertyDescription {
        .relationship(RelationshipDescription(name: name, destination: "\(Destination.self)", inverse: inverse,
                                              deleteRule: deleteRule, isOptional: false))
    }

    /// A to-many relationship.
    public static func _$property<Destination: ManagedObject>(
        _ name: String, _ type: Set<Destination>.Type, deleteRule: DeleteRule = .nullify, inverse: String = "",
        minCount: Int = 0, maxCount: Int = 0
    ) -> PropertyDescription {
        .relationship(RelationshipDescription(name: name, destination: "\(Destination.self)", inverse: inverse,
                                              toMany: true, deleteRule: deleteRule, minCount: minCount, maxCount: maxCount))
    }

    /// What an `@Entity` property's init accessor initializes: nothing, in zero bytes (the
    /// value lives in the object's values array).
    public struct _$PropertyMarker: Sendable {
        @inlinable public init() {}
    }

    /// Whether `index` is the index of the property called `name` (`@Entity` gives its
    /// accessors constant indices where it can tell them; debug builds check them here).
    public static func _$isIndex(_ index: Int, of name: String) -> Bool {
        let entity = entity()
        return entity.propertyIndex(named: name) == index && entity.compositeIndices(named: name) == nil
    }

    /// The index of a property of an `@Entity` class.
    public static func _$index(_ entity: EntityDescription, _ name: String) -> Int {
        guard let index = entity.propertyIndex(named: name) ?? entity.compositeIndices(named: name)?.first else {
            preconditionFailure("\(entity.name) has no property \(name); @Entity and its description disagree")
        }
        return index
    }

    @inlinable public final func _$get<Value: PersistentAttributeValue>(_ index: Int) -> Value {
        _$attribute(index, as: Value.self)
    }

    @_disfavoredOverload
    public final func _$get<Value: Codable>(_ index: Int) -> Value { _$attribute(index, as: Value.self) }

    // The common attribute types (and their optionals, below) read a fetched object's column
    // directly: no `AttributeValue` made and taken apart per read (about half the time of a
    // read, a million objects' worth of reads in a large fetch). Anything else reads as the
    // generic getter does.
    public final func _$get(_ index: Int) -> String {
        sharedColumnValue(String.self, at: index) ?? _$attribute(index, as: String.self)
    }

    public final func _$get(_ index: Int) -> Int64 {
        sharedColumnValue(Int64.self, at: index) ?? _$attribute(index, as: Int64.self)
    }

    public final func _$get(_ index: Int) -> Int {
        sharedColumnValue(Int64.self, at: index).map { Int($0) } ?? _$attribute(index, as: Int.self)
    }

    public final func _$get(_ index: Int) -> Int32 {
        sharedColumnValue(Int64.self, at: index).map { Int32(truncatingIfNeeded: $0) } ?? _$attribute(index, as: Int32.self)
    }

    public final func _$get(_ index: Int) -> Int16 {
        sharedColumnValue(Int64.self, at: index).map { Int16(truncatingIfNeeded: $0) } ?? _$attribute(index, as: Int16.self)
    }

    public final func _$get(_ index: Int) -> Double {
        sharedColumnValue(Double.self, at: index) ?? _$attribute(index, as: Double.self)
    }

    public final func _$get(_ index: Int) -> Bool {
        sharedColumnValue(Bool.self, at: index) ?? _$attribute(index, as: Bool.self)
    }

    public final func _$get(_ index: Int) -> Date {
        sharedColumnValue(Date.self, at: index) ?? _$attribute(index, as: Date.self)
    }

    // Optional attributes alike: NULL (no column value) reads through the generic getter, as nil.
    public final func _$get(_ index: Int) -> String? {
        sharedColumnValue(String.self, at: index) ?? _$attribute(index, as: String?.self)
    }

    public final func _$get(_ index: Int) -> Int64? {
        sharedColumnValue(Int64.self, at: index) ?? _$attribute(index, as: Int64?.self)
    }

    public final func _$get(_ index: Int) -> Int? {
        sharedColumnValue(Int64.self, at: index).map { Int($0) } ?? _$attribute(index, as: Int?.self)
    }

    public final func _$get(_ index: Int) -> Int32? {
        sharedColumnValue(Int64.self, at: index).map { Int32(truncatingIfNeeded: $0) } ?? _$attribute(index, as: Int32?.self)
    }

    public final func _$get(_ index: Int) -> Int16? {
        sharedColumnValue(Int64.self, at: index).map { Int16(truncatingIfNeeded: $0) } ?? _$attribute(index, as: Int16?.self)
    }

    public final func _$get(_ index: Int) -> Double? {
        sharedColumnValue(Double.self, at: index) ?? _$attribute(index, as: Double?.self)
    }

    public final func _$get(_ index: Int) -> Bool? {
        sharedColumnValue(Bool.self, at: index) ?? _$attribute(index, as: Bool?.self)
    }

    public final func _$get(_ index: Int) -> Date? {
        sharedColumnValue(Date.self, at: index) ?? _$attribute(index, as: Date?.self)
    }

    public final func _$get<Destination: ManagedObject>(_ index: Int) -> Destination? { _$toOne(index, as: Destination.self) }

    /// A required to-one relationship. When it is nil after all — a new object before it is
    /// set (its save's validation reports that), or a fault whose row another process deleted
    /// (it reads as deleted, with default values) — the getter cannot stop the process: it
    /// returns a placeholder that belongs to no context and reads as deleted, with its
    /// entity's default values.
    public final func _$get<Destination: ManagedObject>(_ index: Int) -> Destination {
        if let object = _$toOne(index, as: Destination.self) { return object }
        let placeholder = Destination(entity: entity.destination(of: index), insertInto: nil)
        placeholder.isDeletedStorage = true
        return placeholder
    }

    public final func _$get<Destination: ManagedObject>(_ index: Int) -> Set<Destination> {
        _$toMany(index, as: Destination.self)
    }

    public final func _$get<Destination: ManagedObject>(_ index: Int) -> [Destination] {
        _$orderedToMany(index, as: Destination.self)
    }

    /// Reads a composite attribute from its elements, stored from `index` on.
    public final func _$get<Value: CompositeAttributeValue>(_ index: Int) -> Value {
        Value(compositeValues: (0..<Value.compositeElements.count).map { primitiveValue(at: index + $0) })
    }

    /// Writes a composite attribute's elements; only those whose value differs change.
    public final func _$set<Value: CompositeAttributeValue>(_ index: Int, _ value: Value) {
        for (offset, element) in value.compositeValues.enumerated() where primitiveValue(at: index + offset) != element {
            setPrimitiveValue(element, at: index + offset)
        }
    }

    @inlinable public final func _$set<Value: PersistentAttributeValue>(_ index: Int, _ value: Value) {
        _$setAttribute(index, value)
    }

    @_disfavoredOverload
    public final func _$set<Value: Codable>(_ index: Int, _ value: Value) { _$setAttribute(index, value) }

    public final func _$set<Destination: ManagedObject>(_ index: Int, _ value: Destination?) { _$setToOne(index, value) }

    public final func _$set<Destination: ManagedObject>(_ index: Int, _ value: Set<Destination>) { _$setToMany(index, value) }

    public final func _$set<Destination: ManagedObject>(_ index: Int, _ value: [Destination]) { _$setOrderedToMany(index, value) }
}
