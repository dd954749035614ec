/// The set of entities an app stores: the schema of its objects.
///
/// Core Data equivalent: `NSManagedObjectModel`. Build it from `@Entity` classes, or from
/// entity descriptions for generic code:
///
/// ```swift
/// let model = ManagedObjectModel(Item.self, TodoList.self)
/// let sql = model.createSchemaSQL()   // the DDL of every table, constraint and index
/// ```
///
/// Relationships are resolved when the model is made; problems (a missing inverse, an
/// unknown destination) are listed in ``problems`` and make loading a store fail with
/// all of them.
public final class ManagedObjectModel: Sendable, CustomStringConvertible {
    /// The entities, in the order given.
    public let entities: [EntityDescription]
    /// The entities by name.
    public let entitiesByName: [String: EntityDescription]
    /// What is wrong with the model; empty when it is usable.
    public let problems: [String]

    /// A model of the entities of `@Entity` classes.
    public convenience init(_ classes: ManagedObject.Type...) {
        self.init(entities: classes.map { $0.entity() })
    }

    /// A model of the given entities.
    ///
    /// A description another model already uses (the same `@Entity` class in two models) is
    /// copied for this one, so that the two never share indices, relationships or caches.
    public init(entities given: [EntityDescription]) {
        EntityDescription.resolutionLock.lock()
        var entities: [EntityDescription] = []
        var byName: [String: EntityDescription] = [:]
        var problems: [String] = []
        let number = EntityDescription.nextModelNumber
        EntityDescription.nextModelNumber += 1
        for entity in given {
            let own = entity.claimed(by: number)
            entities.append(own)
            if byName[own.name] != nil { problems.append("two entities are called \(own.name)") }
            byName[own.name] = own
        }
        problems += EntityDescription.linkHierarchies(entities, byName: byName)
        EntityDescription.addImplicitInverses(entities, byName: byName)
        for (index, entity) in entities.enumerated() {
            problems += entity.resolve(in: byName, index: index)
        }
        EntityDescription.resolutionLock.unlock()
        var tables: [String: String] = [:]
        for entity in entities where entity.superentity == nil {
            if let other = tables[entity.tableName] {
                problems.append("\(entity.name) and \(other) both map to the table \"\(entity.tableName)\"")
            }
            tables[entity.tableName] = entity.name
        }
        var byClass: [ObjectIdentifier: EntityDescription] = [:]
        for entity in entities where entity.managedObjectClass != ManagedObject.self {
            byClass[ObjectIdentifier(entity.managedObjectClass)] = entity
        }
        self.number = number
        self.hasOrderedRelationships = entities.contains { $0.relationships.contains { $0.isToMany && $0.isOrdered } }
        self.hasDerivations = entities.contains { !$0.derivations.isEmpty }
        self.hasUniqueKeys = entities.contains { !$0.uniqueKeys.isEmpty }
        self.entities = entities
        self.entitiesByName = byName
        self.entitiesByClass = byClass
        self.problems = problems
    }

    /// Whether any entity has an ordered relationship, a derived attribute, a unique key:
    /// a save of a model without them skips the work they need.
    let hasOrderedRelationships: Bool
    let hasDerivations: Bool
    let hasUniqueKeys: Bool

    /// Identifies the model to the descriptions it owns (``EntityDescription``'s owner).
    let number: UInt64
    private let entitiesByClass: [ObjectIdentifier: EntityDescription]

    /// True when `entity` is this model's own description.
    func owns(_ entity: EntityDescription) -> Bool {
        entity.owner == number
    }

    /// The entity whose objects are instances of `type`.
    public func entity(for type: ManagedObject.Type) -> EntityDescription? {
        entitiesByClass[ObjectIdentifier(type)]
    }

    public var description: String { "ManagedObjectModel(\(entities.map(\.name).joined(separator: ", ")))" }
}
