import PostgresClient

/// The query that loads a fetched property for many owners at once: the destination rows
/// matching the predicate for each owner key of `$1`, each row followed by its owner's key,
/// in owner order and then the property's sort order.
struct FetchedPropertyPlan: Sendable {
    let sql: String
    let bindings: PostgresBindings

    init(_ property: FetchedPropertyDescription, of owner: EntityDescription, destination: EntityDescription, owners: [Int64]) throws {
        var compiler = PredicateSQL(entity: destination, bindings: try PostgresBindings(owners))
        compiler.bindVariable("FETCH_SOURCE", to: owner, alias: "src")
        let condition = try compiler.condition(try FetchPredicate(format: property.predicateFormat).node)
        var order = ["s.k"]
        for descriptor in property.sortDescriptors {
            let (sql, type) = try compiler.sortExpression(descriptor.key)
            order.append(descriptor.orderTerm(sql, type: type))
        }
        order.append("t.\"id\"")
        var sql = "SELECT \(PersistentStoreCoordinator.selectList(destination)), s.k FROM unnest($1::bigint[]) AS s(k)"
        sql += " JOIN \(quoteIdentifier(owner.tableName)) AS src ON src.\"id\" = s.k CROSS JOIN \(quoteIdentifier(destination.tableName)) AS t"
        for join in compiler.joins { sql += " " + join }
        sql += " WHERE (\(condition)) ORDER BY \(order.joined(separator: ", "))"
        self.sql = sql
        bindings = compiler.bindings
    }
}
