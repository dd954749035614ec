extension EntityDescription {
    /// Gives every relationship declared without an inverse, whose destination has none
    /// pointing back, an implicit to-many inverse on that destination (Core Data allows a
    /// relationship without an inverse; the database needs a side to keep it consistent).
    /// Called by the model before it resolves relationships, under `resolutionLock`.
    static func addImplicitInverses(_ entities: [EntityDescription], byName: [String: EntityDescription]) {
        for entity in entities {
            for property in entity.properties {
                // Only when nothing on the other side could be the inverse: an ambiguous pair
                // stays a model problem that asks for a name.
                guard case .relationship(let relationship) = property, relationship.inverseName.isEmpty, !relationship.isImplicitInverse,
                      let destination = byName[relationship.destinationEntityName],
                      !destination.relationships.contains(where: { other in
                          entity.selfAndAncestorNames.contains(other.destinationEntityName)
                              && (other.inverseName.isEmpty || other.inverseName == relationship.name)
                              && !(destination === entity && other.name == relationship.name)
                      }) else { continue }
                var inverse = RelationshipDescription(
                    name: "_inverseOf\(entity.name)\(relationship.name.prefix(1).uppercased())\(relationship.name.dropFirst())",
                    destination: entity.name, inverse: relationship.name, toMany: true,
                    deleteRule: relationship.isToMany || relationship.isOptional ? .nullify : .deny)
                inverse.isImplicitInverse = true
                destination.appendProperty(.relationship(inverse))
            }
        }
    }
}

extension EntityDescription {
    /// This entity's name and its ancestors' (a relationship to an ancestor reaches it too).
    var selfAndAncestorNames: Set<String> {
        var names: Set<String> = [name]
        var ancestor = superentity
        while let parent = ancestor, names.insert(parent.name).inserted { ancestor = parent.superentity }
        return names
    }
}
