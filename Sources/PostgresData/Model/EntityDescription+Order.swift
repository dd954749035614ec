extension EntityDescription {
    /// Where an ordered to-many relationship keeps its order: the table holding its rows
    /// (the destination's, or the join table) and the position column there
    /// (`items_position`); nil for any other relationship.
    func orderColumn(of index: Int) -> (table: String, column: String)? {
        guard let relationship = properties[index].relationship, relationship.isToMany, relationship.isOrdered else { return nil }
        let column = SchemaNaming.identifier(SchemaNaming.snakeCase(relationship.name), "position")
        switch storage(of: index) {
        case .inverseForeignKey: return (destination(of: index).tableName, column)
        case .joinTable(let join): return (join.name, column)
        case .foreignKey: return nil
        }
    }

    /// The position columns of this entity's table: one per ordered to-many relationship
    /// of another entity that this entity's foreign keys hold.
    var positionColumns: [String] {
        columnIndices.compactMap { index -> String? in
            guard properties[index].relationship != nil else { return nil }
            return destination(of: index).orderColumn(of: inverseIndex(of: index))?.column
        }
    }
}
