import PostgresClient

/// The statements that read rows by key and related rows, planned without a server: a
/// fault's (or a batch of faults') rows, and the rows a to-many relationship holds for many
/// owners at once (prefetching). Each takes the keys as one array parameter, `$1`.
enum RelationshipFetchPlan {
    /// `SELECT <columns> FROM table AS t WHERE t."id" = ANY($1)`: rows by key.
    static func rows(of entity: EntityDescription) -> String {
        "SELECT \(PersistentStoreCoordinator.selectList(entity)) FROM \(quoteIdentifier(entity.tableName)) AS t WHERE t.\"id\" = ANY($1)"
    }

    /// The destination rows of `entity`'s to-many relationship `index` for the owners `$1`,
    /// each followed by its owner's key, in key order: through the destination's foreign key,
    /// or through the join table of a many-to-many relationship.
    static func ownedRows(of entity: EntityDescription, relationship index: Int) -> String {
        let destination = entity.destination(of: index)
        let select = PersistentStoreCoordinator.selectList(destination)
        // An ordered relationship: each row's position after its owner, and rows in order.
        let position = entity.orderColumn(of: index).map { quoteIdentifier($0.column) }
        if case .joinTable(let join) = entity.storage(of: index) {
            let source = quoteIdentifier(join.sourceColumn)
            return "SELECT \(select), l.\(source)\(position.map { ", l.\($0)" } ?? "") FROM \(quoteIdentifier(join.name)) AS l JOIN \(quoteIdentifier(destination.tableName)) AS t ON t.\"id\" = l.\(quoteIdentifier(join.destinationColumn)) WHERE l.\(source) = ANY($1) ORDER BY \(position.map { "l.\($0), " } ?? "")t.\"id\""
        }
        let column = quoteIdentifier(destination.columnName(of: entity.inverseIndex(of: index)))
        return "SELECT \(select), t.\(column)\(position.map { ", t.\($0)" } ?? "") FROM \(quoteIdentifier(destination.tableName)) AS t WHERE t.\(column) = ANY($1) ORDER BY \(position.map { "t.\($0), " } ?? "")t.\"id\""
    }

    /// The keys of `entity`'s to-many relationship `index` for the owner `$1`, in order
    /// (an ordered relationship's with their positions); nil for a to-one relationship.
    static func relatedKeys(of entity: EntityDescription, relationship index: Int) -> String? {
        let position = entity.orderColumn(of: index).map { quoteIdentifier($0.column) }
        switch entity.storage(of: index) {
        case .inverseForeignKey:
            let destination = entity.destination(of: index)
            let column = quoteIdentifier(destination.columnName(of: entity.inverseIndex(of: index)))
            return "SELECT \"id\"\(position.map { ", \($0)" } ?? "") FROM \(quoteIdentifier(destination.tableName)) WHERE \(column) = $1 ORDER BY \(position.map { "\($0), " } ?? "")\"id\""
        case .joinTable(let join):
            let key = quoteIdentifier(join.destinationColumn)
            return "SELECT \(key)\(position.map { ", \($0)" } ?? "") FROM \(quoteIdentifier(join.name)) WHERE \(quoteIdentifier(join.sourceColumn)) = $1 ORDER BY \(position.map { "\($0), " } ?? "")\(key)"
        case .foreignKey:
            return nil
        }
    }
}
