import PostgresClient

extension SavePlan {
    /// Positions of an ordered relationship's rows that a save writes.
    enum OrderWrite: Sendable {
        /// Rows of `table` (holding the relationship's foreign key) take `positions`.
        case rows(table: String, column: String, keys: [Int64], positions: [Double])
        /// Join-table rows, by owner and member, take `positions`.
        case links(table: String, column: String, ownerColumn: String, memberColumn: String,
                   owners: [Int64], members: [Int64], positions: [Double])
        /// Rows that joined an owner whose order the context never read go last in it, in
        /// the order given.
        case append(table: String, column: String, foreignKey: String, keys: [Int64])
    }

    /// One `UPDATE … FROM unnest(…)` per write, after the rows exist and hold their foreign keys.
    mutating func planOrder(_ writes: [OrderWrite]) throws {
        for write in writes {
            var bindings = PostgresBindings()
            let sql: String
            switch write {
            case .rows(let table, let column, let keys, let positions):
                try bindings.append(keys)
                try ValueCoding.appendArray(positions.map(AttributeValue.double), of: .double, to: &bindings)
                sql = "UPDATE \(quoteIdentifier(table)) AS t SET \(quoteIdentifier(column)) = u.p FROM unnest($1::bigint[], $2::float8[]) AS u(k, p) WHERE t.\"id\" = u.k"
            case .links(let table, let column, let ownerColumn, let memberColumn, let owners, let members, let positions):
                try bindings.append(owners)
                try bindings.append(members)
                try ValueCoding.appendArray(positions.map(AttributeValue.double), of: .double, to: &bindings)
                sql = "UPDATE \(quoteIdentifier(table)) AS j SET \(quoteIdentifier(column)) = u.p FROM unnest($1::bigint[], $2::bigint[], $3::float8[]) AS u(o, m, p) WHERE j.\(quoteIdentifier(ownerColumn)) = u.o AND j.\(quoteIdentifier(memberColumn)) = u.m"
            case .append(let table, let column, let foreignKey, let keys):
                try bindings.append(keys)
                let position = quoteIdentifier(column)
                let owner = quoteIdentifier(foreignKey)
                sql = "UPDATE \(quoteIdentifier(table)) AS t SET \(position) = coalesce((SELECT max(o.\(position)) FROM \(quoteIdentifier(table)) AS o WHERE o.\(owner) = t.\(owner) AND o.\"id\" <> ALL($1)), 0) + u.n FROM unnest($1::bigint[]) WITH ORDINALITY AS u(k, n) WHERE t.\"id\" = u.k"
            }
            statements.append(Statement(sql: sql, bindings: bindings, check: .none))
        }
    }
}
