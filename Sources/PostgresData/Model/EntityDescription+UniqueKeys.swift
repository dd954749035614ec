/// A set of properties whose values no two rows of an entity share: an attribute marked
/// unique, or one of the entity's ``EntityDescription/uniquenessConstraints``.
struct UniqueKey: Sendable {
    /// The constraint's name in the database (`tag_name_key`).
    var name: String
    /// The properties, by index, in the constraint's order.
    var indices: [Int]
}

extension EntityDescription {
    /// The entity's unique keys (``uniqueKeys``), computed once when the model resolves it:
    /// attributes marked unique first (in declaration order), then ``uniquenessConstraints``,
    /// named as the schema names their constraints. One-to-one foreign keys are unique too
    /// but are not keys an object is looked up by, nor are keys over derived attributes
    /// (the object does not hold their values before the save).
    func makeUniqueKeys() -> [UniqueKey] {
        var keys: [UniqueKey] = []
        for (index, property) in properties.enumerated() {
            guard let attribute = property.attribute, attribute.isUnique, derivations[index] == nil else { continue }
            keys.append(UniqueKey(name: SchemaNaming.uniqueConstraintName(tableName, columns: [attribute.columnName]), indices: [index]))
        }
        for names in uniquenessConstraints {
            let indices = names.compactMap(propertyIndex(named:))
            guard indices.count == names.count, indices.allSatisfy(writableColumnIndices.contains) else { continue }
            keys.append(UniqueKey(name: SchemaNaming.uniqueConstraintName(tableName, columns: indices.map(columnName(of:))),
                                  indices: indices))
        }
        return keys
    }
}
