import Foundation
import PostgresClient
import SwiftShims

/// An entity of the model: its name, class, properties, constraints and table.
///
/// Core Data equivalent: `NSEntityDescription`. `@Entity` builds one for each class; generic
/// code can build them by hand:
///
/// ```swift
/// let item = EntityDescription(name: "Item", properties: [
///     .attribute(AttributeDescription(name: "name", type: .string)),
///     .relationship(RelationshipDescription(name: "list", destination: "TodoList", inverse: "items")),
/// ])
/// ```
///
/// An entity is immutable once a ``ManagedObjectModel`` holds it, and can then be shared
/// by every thread (that is what makes it `Sendable`).
public final class EntityDescription: @unchecked Sendable, Hashable, CustomStringConvertible {
    // The stored variables are set while a model resolves its entities (under its lock) and
    // only read afterwards, once per object by inserts, fetches and saves: they skip Swift's
    // dynamic exclusivity checks.

    /// The entity name (`TodoList`).
    public let name: String
    /// The table name; snake_case of ``name`` unless set (`todo_list`).
    public let tableName: String
    /// The class of the objects; ``ManagedObject`` itself for entities built without a class.
    public let managedObjectClass: ManagedObject.Type
    /// Every property in declaration order; a composite attribute's elements stand in its place
    /// (`address.street`, `address.city`).
    @exclusivity(unchecked) public private(set) var properties: [PropertyDescription]
    /// The properties as given (a parent's first), composites whole.
    private let declaredProperties: [PropertyDescription]
    /// How many of ``properties`` come from the parent entity (the first ones).
    @exclusivity(unchecked) private(set) var inheritedPropertyCount: Int
    /// The name of the entity this one is a sub-entity of.
    @exclusivity(unchecked) public private(set) var parentEntityName: String?
    /// True for an entity that has no objects of its own, only its sub-entities' (Core
    /// Data's `isAbstract`): inserting one fails.
    public let isAbstract: Bool
    /// Composite attributes: the name and the indices of their elements, in order.
    let composites: [(name: String, description: AttributeDescription, indices: [Int])]
    /// Sets of property names whose values must be unique together (`UNIQUE (a, b)`).
    public let uniquenessConstraints: [[String]]
    /// Sets of property names that get a (multi-column) index.
    public let indexes: [[String]]
    /// Stored fetches whose value is the objects of another entity matching a predicate
    /// about this object (`$FETCH_SOURCE`).
    public let fetchedProperties: [FetchedPropertyDescription]

    @exclusivity(unchecked) private(set) var propertyIndexByName: [String: Int]
    // Set once by the model that resolves the relationships (under `resolutionLock`).
    @exclusivity(unchecked) private(set) var relationshipStorage: [Int: RelationshipStorage] = [:]
    @exclusivity(unchecked) private(set) var destinations: [Int: EntityDescription] = [:]
    @exclusivity(unchecked) private(set) var inverseIndices: [Int: Int] = [:]
    /// The property indices stored as columns of ``tableName``, in table order after `id`.
    package private(set) var columnIndices: [Int] = []
    /// How each column of ``columnIndices`` decodes: an attribute's type, or the entity a
    /// foreign key points at (precomputed: the per-row path copies no descriptions).
    @exclusivity(unchecked) private(set) var columnDecodings: [ColumnDecoding] = []
    /// Property indices of relationships loaded on demand (to-many, join tables, the
    /// non-owning side of one-to-one).
    @exclusivity(unchecked) private(set) var derivedRelationshipIndices: [Int] = []
    /// The sets of properties no two rows share (see ``makeUniqueKeys()``).
    @exclusivity(unchecked) private(set) var uniqueKeys: [UniqueKey] = []
    /// How each derived attribute is computed, by property index.
    @exclusivity(unchecked) private(set) var derivations: [Int: Derivation] = [:]
    /// The columns a save or batch insert writes: ``columnIndices`` but derived attributes,
    /// which the database computes.
    @exclusivity(unchecked) private(set) var writableColumnIndices: [Int] = []
    @exclusivity(unchecked) private(set) var isResolved = false
    /// The index of this entity in its model.
    @exclusivity(unchecked) private(set) var modelIndex = 0
    /// The entity this one is a sub-entity of, and its own sub-entities (set by the model).
    @exclusivity(unchecked) var superentity: EntityDescription?
    @exclusivity(unchecked) var subentities: [EntityDescription] = []
    /// The top of this entity's hierarchy (itself outside one); its table holds every row of
    /// the hierarchy. Set by the model.
    @exclusivity(unchecked) var hierarchyRoot: EntityDescription? {
        didSet { hierarchyRootIdentifier = hierarchyRoot.map(ObjectIdentifier.init) }
    }
    /// ``hierarchyRoot``'s identity, which hashing an object ID reads without retaining it.
    @exclusivity(unchecked) private(set) var hierarchyRootIdentifier: ObjectIdentifier?

    /// Describes an entity; with `parent`, a sub-entity: it has the parent's properties
    /// first, then its own, and its rows live in the parent's table.
    public init(name: String, managedObjectClass: ManagedObject.Type = ManagedObject.self,
                properties: [PropertyDescription], uniquenessConstraints: [[String]] = [],
                indexes: [[String]] = [], tableName: String? = nil, fetchedProperties: [FetchedPropertyDescription] = [],
                parent: EntityDescription? = nil, isAbstract: Bool = false) {
        self.name = name
        self.parentEntityName = parent?.name
        self.isAbstract = isAbstract
        self.fetchedProperties = (parent?.fetchedProperties ?? []) + fetchedProperties
        self.tableName = tableName ?? parent?.tableName ?? SchemaNaming.snakeCase(name)
        self.managedObjectClass = managedObjectClass
        let declared = (parent?.declaredProperties ?? []) + properties
        self.declaredProperties = declared
        self.inheritedPropertyCount = parent?.properties.count ?? 0
        let (properties, composites) = Self.flatteningComposites(declared)
        self.properties = properties
        self.composites = composites
        self.uniquenessConstraints = uniquenessConstraints
        self.indexes = indexes
        var byName: [String: Int] = [:]
        for (index, property) in properties.enumerated() where byName[property.name] == nil {
            byName[property.name] = index
        }
        self.propertyIndexByName = byName
        self.defaultValues = properties.map { $0.attribute?.defaultValue ?? .null }
        self.placeholderValues = properties.map { property in
            guard let attribute = property.attribute else { return .null }
            if case .null = attribute.defaultValue, !attribute.isOptional { return attribute.attributeType.zeroValue }
            return attribute.defaultValue
        }
        self.relationshipIndices = properties.indices.filter { properties[$0].relationship != nil }
        self.attributeRules = properties.enumerated().compactMap { index, property in
            property.attribute.map { (index, AttributeRule($0)) }
        }
        self.plainAttributeChecks = attributeRules.compactMap { index, rule in
            rule.predicates.isEmpty ? rule.plainCheck.map { (index, $0) } : nil
        }
        self.otherAttributeRules = attributeRules.filter { $0.rule.plainCheck == nil || !$0.rule.predicates.isEmpty }
        Self.created.withLock { $0.append(self) }
        // `created` keeps it for ever, and the runtime is told so: retaining and releasing it
        // then read its count and write nothing. The objects of a large fetch, made by two
        // threads at once, each retained and released their shared entity, each operation
        // waiting for the other core to give up the cache line holding the count.
        _swift_stdlib_immortalize(Unmanaged.passUnretained(self).toOpaque())
    }

    /// Every description ever made: descriptions are immortal, so that IDs and objects can
    /// refer to theirs without reference counting (a model is small and lives as long as
    /// the process in practice).
    private static let created = Locked<[EntityDescription]>([])

    /// The attributes, in declaration order.
    public var attributes: [AttributeDescription] { properties.compactMap(\.attribute) }
    /// The relationships, in declaration order.
    public var relationships: [RelationshipDescription] { properties.compactMap(\.relationship) }
    /// Attributes by name.
    public var attributesByName: [String: AttributeDescription] {
        Dictionary(attributes.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }
    /// Relationships by name.
    public var relationshipsByName: [String: RelationshipDescription] {
        Dictionary(relationships.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The index of the property called `name` in ``properties``, or nil.
    public func propertyIndex(named name: String) -> Int? { propertyIndexByName[name] }

    /// The entity a relationship points at.
    public func destinationEntity(ofRelationship name: String) -> EntityDescription? {
        propertyIndexByName[name].flatMap { destinations[$0] }
    }

    func destination(of index: Int) -> EntityDescription { destinations[index]! }
    func inverseIndex(of index: Int) -> Int { inverseIndices[index]! }
    func storage(of index: Int) -> RelationshipStorage { relationshipStorage[index]! }

    /// The join table of the relationship at `index` and its two key columns (the owner's
    /// first); nil when the property is not a many-to-many relationship.
    package func joinTable(of index: Int) -> (name: String, sourceColumn: String, destinationColumn: String)? {
        guard case .joinTable(let join)? = relationshipStorage[index] else { return nil }
        return (join.name, join.sourceColumn, join.destinationColumn)
    }

    /// The column name of a stored property (attribute or foreign key).
    package func columnName(of index: Int) -> String {
        switch properties[index] {
        case .attribute(let attribute): return attribute.columnName
        case .relationship:
            if case .foreignKey(let column) = relationshipStorage[index] { return column }
            preconditionFailure("\(name).\(properties[index].name) has no column")
        }
    }

    /// Values of a newly inserted object: every attribute's default, nil relationships.
    @exclusivity(unchecked) private(set) var defaultValues: [AttributeValue]
    /// Values of an object that has none to read (a fault whose row is gone, or whose store
    /// failed): the defaults, and for required attributes without one their type's zero
    /// (`0`, `""`, `false`, the reference date), so that a property read never traps.
    @exclusivity(unchecked) private(set) var placeholderValues: [AttributeValue]
    /// The indices of the relationships.
    @exclusivity(unchecked) private(set) var relationshipIndices: [Int]
    /// The attributes with the rules a value must follow, by property index.
    let attributeRules: [(index: Int, rule: AttributeRule)]
    /// The attributes whose values need only their type, range and optionality checked (no
    /// bounds, length, pattern or predicate): checked together first, without a message.
    let plainAttributeChecks: [(index: Int, check: PlainAttributeCheck)]
    /// The rules of the other attributes, which ``plainAttributeChecks`` leaves to them.
    let otherAttributeRules: [(index: Int, rule: AttributeRule)]
    /// True when some property is a to-one relationship stored as a foreign key.
    @exclusivity(unchecked) private(set) var hasForeignKeys = false

    public var description: String { "EntityDescription(\(name) → \"\(tableName)\")" }

    public static func == (lhs: EntityDescription, rhs: EntityDescription) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    // MARK: Resolution by the model

    static let resolutionLock = NSLock()

    /// The model that owns this description (its indices, relationships' destinations, row
    /// cache and sequence slots are that model's); set once, under `resolutionLock`.
    @exclusivity(unchecked) private(set) var owner: UInt64?

    /// The number of the next model made (under `resolutionLock`); numbers are never reused.
    nonisolated(unsafe) static var nextModelNumber: UInt64 = 1

    /// This description for `model`: itself when no model owns it yet, else a copy of its
    /// own (an `@Entity` class's description is shared by every model listing the class).
    /// Called under `resolutionLock`.
    func claimed(by model: UInt64) -> EntityDescription {
        let entity = owner == nil ? self : EntityDescription(
            name: name, managedObjectClass: managedObjectClass, properties: declaredProperties,
            uniquenessConstraints: uniquenessConstraints, indexes: indexes, tableName: tableName,
            fetchedProperties: fetchedProperties, isAbstract: isAbstract)
        entity.parentEntityName = parentEntityName
        entity.inheritedPropertyCount = inheritedPropertyCount
        entity.owner = model
        return entity
    }

    /// Resolves relationships against `entities`; returns the problems found (missing
    /// destinations or inverses, mismatched inverses). Called once, under `resolutionLock`.
    func resolve(in entities: [String: EntityDescription], index: Int) -> [String] {
        var problems: [String] = []
        var storage: [Int: RelationshipStorage] = [:]
        var destinations: [Int: EntityDescription] = [:]
        var inverses: [Int: Int] = [:]
        var columns: [Int] = []
        var derived: [Int] = []
        for (propertyIndex, property) in properties.enumerated() {
            guard case .relationship(let relationship) = property else {
                columns.append(propertyIndex)
                continue
            }
            let label = "\(name).\(relationship.name)"
            if relationship.isOrdered && !relationship.isToMany {
                problems.append("\(label) is ordered but to-one: only a to-many relationship keeps an order")
            }
            guard let destination = entities[relationship.destinationEntityName] else {
                problems.append("\(label) points at entity \"\(relationship.destinationEntityName)\", which is not in the model")
                continue
            }
            let inverseName = relationship.inverseName.isEmpty ? destination.inverseName(pointingAt: self, from: relationship.name) : relationship.inverseName
            // The inverse of an inherited relationship points at an ancestor.
            let names = selfAndAncestorNames
            guard let inverseName, let inverseIndex = destination.propertyIndexByName[inverseName],
                  case .relationship(let inverse) = destination.properties[inverseIndex] else {
                problems.append(relationship.inverseName.isEmpty
                    ? "\(label) has no inverse, and more than one relationship of \(destination.name) could be it: name it (inverse: \\\(destination.name).…) on one side"
                    : "\(label) names the inverse \"\(relationship.inverseName)\", which is not a relationship of \(destination.name); name one of its relationships, or none for an implicit inverse")
                continue
            }
            guard names.contains(inverse.destinationEntityName),
                  inverse.inverseName == relationship.name || (inverse.inverseName.isEmpty && !relationship.inverseName.isEmpty)
                    || (relationship.inverseName.isEmpty && inverseName == inverse.name) else {
                problems.append("\(label) and its inverse \(destination.name).\(inverse.name) do not point at each other")
                continue
            }
            destinations[propertyIndex] = destination
            inverses[propertyIndex] = inverseIndex
            switch (relationship.isToMany, inverse.isToMany) {
            case (false, true):
                storage[propertyIndex] = .foreignKey(column: SchemaNaming.snakeCase(relationship.name) + "_id")
                columns.append(propertyIndex)
            case (false, false):
                // One-to-one: the side whose "Entity.name" sorts first holds the foreign key.
                if "\(name).\(relationship.name)" <= "\(destination.name).\(inverse.name)" {
                    storage[propertyIndex] = .foreignKey(column: SchemaNaming.snakeCase(relationship.name) + "_id")
                    columns.append(propertyIndex)
                } else {
                    storage[propertyIndex] = .inverseForeignKey
                    derived.append(propertyIndex)
                }
            case (true, false):
                storage[propertyIndex] = .inverseForeignKey
                derived.append(propertyIndex)
            case (true, true):
                storage[propertyIndex] = .joinTable(Self.joinTable(self, relationship, destination, inverse))
                derived.append(propertyIndex)
            }
        }
        for property in properties {
            // What a JSON attribute reads as when its stored JSON does not decode as its type
            // (another program wrote it): nil, or its default — never a stop.
            guard let attribute = property.attribute, attribute.attributeType == .codable,
                  !attribute.isOptional, attribute.defaultValue.isNull else { continue }
            problems.append("\(name).\(attribute.name) is a JSON attribute of a type that is not Optional and has no default value: make it Optional or give it a default, which it reads as when its stored JSON does not decode")
        }
        var derivations: [Int: Derivation] = [:]
        for (index, property) in properties.enumerated() {
            guard let attribute = property.attribute, attribute.derivationExpression != nil else { continue }
            switch Derivation.resolve(attribute, of: self, storage: storage, destinations: destinations) {
            case .success(let derivation): derivations[index] = derivation
            case .failure(let problem): problems.append(problem.description)
            }
        }
        for fetched in fetchedProperties {
            let label = "\(name).\(fetched.name)"
            if propertyIndexByName[fetched.name] != nil {
                problems.append("\(label) is both a property and a fetched property")
            }
            if entities[fetched.destinationEntityName] == nil {
                problems.append("\(label) fetches entity \"\(fetched.destinationEntityName)\", which is not in the model")
            }
            do {
                _ = try FetchPredicate(format: fetched.predicateFormat)
            } catch {
                problems.append("\(label): the predicate \"\(fetched.predicateFormat)\" does not parse: \(error)")
            }
        }
        for constraint in uniquenessConstraints + indexes {
            for key in constraint where propertyIndexByName[key] == nil {
                problems.append("\(name) has a uniqueness constraint or index on \"\(key)\", which is not one of its properties")
            }
        }
        if !isResolved {
            relationshipStorage = storage
            self.destinations = destinations
            inverseIndices = inverses
            columnIndices = columns
            columnDecodings = columns.map { index in
                if let attribute = properties[index].attribute { return .attribute(attribute.attributeType) }
                return .foreignKey(destinations[index]!)
            }
            hasForeignKeys = columns.contains { properties[$0].relationship != nil }
            derivedRelationshipIndices = derived
            self.derivations = derivations
            writableColumnIndices = columns.filter { derivations[$0] == nil }
            uniqueKeys = makeUniqueKeys()
            modelIndex = index
            isResolved = problems.isEmpty
        }
        return problems
    }

    /// Appends a property the model adds (an implicit inverse), before any object exists.
    func appendProperty(_ property: PropertyDescription) {
        properties.append(property)
        propertyIndexByName[property.name] = properties.count - 1
        defaultValues.append(.null)
        placeholderValues.append(.null)
        relationshipIndices.append(properties.count - 1)
    }

    /// The relationship of this entity that is the inverse of `source`'s relationship `name`:
    /// the one naming it as inverse, or else the only one pointing at `source` without an inverse.
    func inverseName(pointingAt source: EntityDescription, from name: String) -> String? {
        let names = source.selfAndAncestorNames
        let candidates = relationships.filter { names.contains($0.destinationEntityName) }
        if let named = candidates.first(where: { $0.inverseName == name }) { return named.name }
        let unnamed = candidates.filter { $0.inverseName.isEmpty && ($0.name != name || source !== self) }
        return unnamed.count == 1 ? unnamed[0].name : nil
    }

    /// The join table of a many-to-many pair, named after the side that sorts first
    /// (`team_players`), with columns named after the two tables.
    private static func joinTable(_ source: EntityDescription, _ relationship: RelationshipDescription,
                                  _ destination: EntityDescription, _ inverse: RelationshipDescription) -> JoinTable {
        let sourceFirst = "\(source.name).\(relationship.name)" <= "\(destination.name).\(inverse.name)"
        let owner = sourceFirst ? (source, relationship) : (destination, inverse)
        let name = SchemaNaming.identifier(owner.0.tableName, SchemaNaming.snakeCase(owner.1.name))
        var sourceColumn = source.tableName + "_id"
        var destinationColumn = destination.tableName + "_id"
        if sourceColumn == destinationColumn {
            // A relationship of an entity to itself: name the columns after the relationships.
            sourceColumn = SchemaNaming.snakeCase(inverse.name) + "_id"
            destinationColumn = SchemaNaming.snakeCase(relationship.name) + "_id"
        }
        return JoinTable(name: name, sourceColumn: sourceColumn, destinationColumn: destinationColumn)
    }
}

/// An attribute's description held by reference, so that validating many objects does not
/// copy it for each value.
final class AttributeRule: Sendable {
    let attribute: AttributeDescription
    /// For an attribute without bounds, length or pattern, the check its rule comes down to.
    let plainCheck: PlainAttributeCheck?
    /// The attribute's validation predicates, parsed once, with `SELF` read as the attribute's
    /// key (the node is nil when the format does not parse: the error says why).
    let predicates: [(format: String, node: Result<PredicateNode, PredicateSyntaxError>)]

    init(_ attribute: AttributeDescription) {
        self.attribute = attribute
        let plain = attribute.minValue == nil && attribute.maxValue == nil && attribute.minLength == nil
            && attribute.maxLength == nil && attribute.regularExpression == nil
        plainCheck = plain ? PlainAttributeCheck(type: attribute.attributeType, isOptional: attribute.isOptional) : nil
        predicates = attribute.validationPredicates.map { format in
            (format, Result { () throws(PredicateSyntaxError) -> PredicateNode in
                try FetchPredicate(format: format).node.readingSelf(as: attribute.name)
            })
        }
    }

    func violations(of value: AttributeValue) -> [String] {
        if let plainCheck, plainCheck.passes(value) { return [] }
        return attribute.violations(of: value)
    }
}

/// What an attribute without bounds, length, pattern or predicate asks of a value: its
/// type, a range that fits, and a value unless optional. Trivial to copy: a save validates
/// every value of every inserted object, and a failure is then described by the attribute's
/// ``AttributeRule``.
struct PlainAttributeCheck {
    let type: AttributeType
    let isOptional: Bool

    @inline(__always)
    func passes(_ value: AttributeValue) -> Bool {
        value.isNull ? isOptional : value.fits(type) && value.isInRange(of: type)
    }
}

/// How one column of an entity's table decodes into an ``AttributeValue``.
enum ColumnDecoding {
    case attribute(AttributeType)
    /// A to-one relationship's key: an ID of the destination entity.
    case foreignKey(EntityDescription)
}
