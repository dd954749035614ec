import PostgresClient

/// The statements of a batch delete, planned without a server: one counting `DELETE`, or,
/// when the deleted IDs are wanted, a locking `SELECT` of the rows, the reach of the delete
/// rules, and a `DELETE` of the keys read.
struct BatchDeletePlan: Sendable {
    /// `WITH d AS (DELETE … RETURNING 1) SELECT count(*) FROM d`.
    var countingDelete: String
    /// `SELECT t."id" … FOR UPDATE OF t`: the rows to delete, locked until the end of the transaction.
    var lockingSelect: String
    /// `DELETE … WHERE t."id" = ANY($1) RETURNING t."id"`, for the keys the select read.
    var deleteByKeys: String
    /// The values of the request's predicate (for `countingDelete` and `lockingSelect`).
    var bindings: PostgresBindings

    init(_ request: BatchDeleteRequest, entity: EntityDescription) throws {
        let (condition, joins, bindings) = try request.condition(for: entity)
        let table = quoteIdentifier(entity.tableName)
        var filter = ""
        if let condition {
            // DELETE cannot LEFT JOIN: the rows are chosen by a subquery with the joins.
            filter = joins.isEmpty ? " WHERE \(condition)"
                : " WHERE t.\"id\" IN (SELECT t.\"id\" FROM \(table) AS t \(joins.joined(separator: " ")) WHERE \(condition))"
        }
        countingDelete = "WITH d AS (DELETE FROM \(table) AS t\(filter) RETURNING 1) SELECT count(*) FROM d"
        lockingSelect = "SELECT t.\"id\" FROM \(table) AS t\(filter) FOR UPDATE OF t"
        deleteByKeys = "DELETE FROM \(table) AS t WHERE t.\"id\" = ANY($1) RETURNING t.\"id\""
        self.bindings = bindings
    }

    /// `SELECT "id" FROM destination WHERE column = ANY($1) FOR UPDATE`: the rows a `cascade` or
    /// `nullify` rule of `entity`'s relationship `index` reaches from a set of keys.
    static func reachingSelect(from entity: EntityDescription, relationship index: Int) -> String {
        let destination = entity.destination(of: index)
        let column = quoteIdentifier(destination.columnName(of: entity.inverseIndex(of: index)))
        return "SELECT \"id\" FROM \(quoteIdentifier(destination.tableName)) WHERE \(column) = ANY($1) FOR UPDATE"
    }
}
