import PostgresClient

/// Entity inheritance, mapped as Core Data's own store maps it: one table per hierarchy,
/// named after its top entity, holding every property of every entity of the hierarchy, and
/// a discriminator column (``EntityDescription/discriminatorColumn``) naming each row's
/// entity. A fetch of a parent entity is one query on one table, a relationship to a parent
/// entity is one foreign key, and keys are unique across the hierarchy — where a table per
/// entity would join or union on every read. The price is that a sub-entity's required
/// attributes are nullable columns with a `CHECK` that requires them on its rows only.
extension EntityDescription {
    /// The column naming each row's entity in a hierarchy's table.
    static let discriminatorColumn = "entity_name"

    /// The sub-entities of this entity (Core Data's `subentities`).
    public var subentitiesByName: [String: EntityDescription] {
        Dictionary(subentities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The entity whose table holds this entity's rows.
    var root: EntityDescription { hierarchyRoot ?? self }

    /// True when this entity's table holds more than one entity's rows.
    var isInHierarchy: Bool { superentity != nil || !subentities.isEmpty }

    /// This entity and every entity below it, depth first.
    var selfAndDescendants: [EntityDescription] {
        [self] + subentities.flatMap(\.selfAndDescendants)
    }

    /// The entities of this one's fetches: itself and, unless excluded, its descendants;
    /// abstract ones have no rows.
    func fetchedEntities(includingSubentities: Bool) -> [EntityDescription] {
        (includingSubentities ? selfAndDescendants : [self]).filter { !$0.isAbstract }
    }

    /// The `entity_name` condition of a fetch of this entity over `alias` (nil when every
    /// row of the table qualifies).
    func discriminatorCondition(alias: String, includingSubentities: Bool = true) -> String? {
        guard isInHierarchy else { return nil }
        if superentity == nil && includingSubentities { return nil }
        let names = fetchedEntities(includingSubentities: includingSubentities).map { quoteLiteral($0.name) }
        let column = alias.isEmpty ? quoteIdentifier(Self.discriminatorColumn) : "\(alias).\(quoteIdentifier(Self.discriminatorColumn))"
        if names.isEmpty { return "FALSE" }  // An abstract entity alone: no rows of its own.
        if names.count == 1 { return "\(column) = \(names[0])" }
        return "\(column) IN (\(names.joined(separator: ", ")))"
    }

    /// Links the entities of a model into hierarchies; returns the problems (an unknown
    /// parent, a cycle).
    static func linkHierarchies(_ entities: [EntityDescription], byName: [String: EntityDescription]) -> [String] {
        var problems: [String] = []
        for entity in entities {
            guard let parentName = entity.parentEntityName else { continue }
            guard let parent = byName[parentName] else {
                problems.append("\(entity.name) is a sub-entity of \(parentName), which is not in the model")
                continue
            }
            entity.superentity = parent
            parent.subentities.append(entity)
        }
        for entity in entities {
            var top = entity
            var steps = 0
            while let parent = top.superentity, steps < entities.count {
                top = parent
                steps += 1
            }
            if steps >= entities.count {
                problems.append("\(entity.name) is its own ancestor")
                continue
            }
            entity.hierarchyRoot = top === entity ? nil : top
        }
        return problems
    }
}
