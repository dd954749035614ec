import PostgresClient

/// The SQL of a fetch, a count and a dictionary fetch, planned without a server.
extension FetchRequest {
    /// `SELECT columns FROM table AS t [JOIN …] WHERE … [AND t.id <> ALL(excluded)] ORDER BY … LIMIT … OFFSET …`.
    func sql(for entity: EntityDescription, columns: String, excluding excluded: [Int64] = []) throws -> (String, PostgresBindings) {
        var compiler = PredicateSQL(entity: entity)
        var conditions = try predicate.map { [try compiler.condition($0.node)] } ?? []
        if let entities = entity.discriminatorCondition(alias: "t", includingSubentities: includesSubentities) { conditions.append(entities) }
        var order: [String] = []
        if resultType != .count {
            for descriptor in sortDescriptors {
                let (sql, type) = try compiler.sortExpression(descriptor.key)
                order.append(Self.orderTerm(sql, type: type, descriptor))
            }
            // Without sort descriptors the order is the store's, as in Core Data; a window
            // (limit, offset) or a tie between sort keys is made deterministic by the key.
            if !order.isEmpty || fetchLimit > 0 || fetchOffset > 0 { order.append("t.\"id\"") }
        }
        var bindings = compiler.bindings
        if !excluded.isEmpty {
            try bindings.append(excluded)
            conditions.append("t.\"id\" <> ALL($\(bindings.count))")
        }
        var sql = "SELECT \(columns) FROM \(quoteIdentifier(entity.tableName)) AS t"
        for join in compiler.joins { sql += " " + join }
        if !conditions.isEmpty { sql += " WHERE " + conditions.map { "(\($0))" }.joined(separator: " AND ") }
        if !order.isEmpty { sql += " ORDER BY " + order.joined(separator: ", ") }
        if resultType != .count { try appendLimits(to: &sql, &bindings) }
        return (sql, bindings)
    }

    static func orderTerm(_ sql: String, type: AttributeType?, _ descriptor: FetchSortDescriptor) -> String {
        descriptor.orderTerm(sql, type: type)
    }

    private func appendLimits(to sql: inout String, _ bindings: inout PostgresBindings) throws {
        if fetchLimit > 0 {
            try bindings.append(Int64(fetchLimit))
            sql += " LIMIT $\(bindings.count)"
        }
        if fetchOffset > 0 {
            try bindings.append(Int64(fetchOffset))
            sql += " OFFSET $\(bindings.count)"
        }
    }

    /// A column of a dictionary fetch: its key, how to decode it, and for a to-one
    /// relationship the entity its IDs belong to.
    /// The SQL of a dictionary fetch: selected key paths and aggregates, `GROUP BY`,
    /// `DISTINCT`, sorts by key path or by expression name.
    func dictionarySQL(for entity: EntityDescription) throws -> (String, PostgresBindings, [DictionaryDecoder.Column]) {
        var compiler = PredicateSQL(entity: entity)
        let condition = try [predicate.map { try compiler.condition($0.node) },
                             entity.discriminatorCondition(alias: "t", includingSubentities: includesSubentities)].conjunction
        let properties = propertiesToFetch ?? entity.columnIndices.map { .keyPath(entity.properties[$0].name) }
        guard !properties.isEmpty else {
            throw PostgresDataError.invalidRequest("a dictionary fetch of \(entity.name) needs propertiesToFetch")
        }
        var selected: [String] = []
        var columns: [DictionaryDecoder.Column] = []
        var keyPaths: [String: String] = [:]
        for property in properties {
            guard !columns.contains(where: { $0.name == property.name }) else {
                throw PostgresDataError.invalidRequest("propertiesToFetch names \"\(property.name)\" twice; give each expression its own name")
            }
            switch property {
            case .keyPath(let key):
                let (sql, type) = try compiler.sortExpression(key)
                selected.append("\(sql) AS \(quoteIdentifier(key))")
                keyPaths[key] = sql
                columns.append(DictionaryDecoder.Column(name: key, type: type, destination: try Self.relationshipDestination(of: key, in: entity)))
            case .expression(let description):
                let (sql, type) = try aggregate(description, compiler: &compiler)
                compiler.namedExpressions[description.name] = (sql, type)
                selected.append("\(sql) AS \(quoteIdentifier(description.name))")
                columns.append(DictionaryDecoder.Column(name: description.name, type: type, destination: nil))
            }
        }
        var grouped: [String] = []
        for key in propertiesToGroupBy {
            grouped.append(try keyPaths[key] ?? compiler.sortExpression(key).sql)
        }
        if !propertiesToGroupBy.isEmpty {
            for key in keyPaths.keys.sorted() where !propertiesToGroupBy.contains(key) {
                throw PostgresDataError.invalidRequest("\(key) is fetched but not grouped by: add it to propertiesToGroupBy or fetch an aggregate of it")
            }
        }
        // Compiled before the FROM clause is written: its key paths may join.
        var having: String?
        if let havingPredicate {
            guard !grouped.isEmpty || !compiler.namedExpressions.isEmpty else {
                throw PostgresDataError.invalidRequest("a havingPredicate filters groups: set propertiesToGroupBy or fetch an aggregate expression")
            }
            having = try compiler.condition(havingPredicate.node)
        }
        var order: [String] = []
        for descriptor in sortDescriptors {
            if let column = columns.first(where: { $0.name == descriptor.key }), keyPaths[descriptor.key] == nil {
                order.append(Self.orderTerm(quoteIdentifier(column.name), type: column.type, descriptor))
                continue
            }
            if (returnsDistinctResults || !propertiesToGroupBy.isEmpty) && keyPaths[descriptor.key] == nil {
                throw PostgresDataError.invalidRequest("cannot sort distinct or grouped results by \(descriptor.key): sort by a fetched key path or expression name")
            }
            let (sql, type) = try compiler.sortExpression(descriptor.key)
            order.append(Self.orderTerm(sql, type: type, descriptor))
        }
        var sql = "SELECT \(returnsDistinctResults ? "DISTINCT " : "")\(selected.joined(separator: ", ")) FROM \(quoteIdentifier(entity.tableName)) AS t"
        for join in compiler.joins { sql += " " + join }
        if let condition { sql += " WHERE \(condition)" }
        if !grouped.isEmpty { sql += " GROUP BY " + grouped.joined(separator: ", ") }
        if let having { sql += " HAVING \(having)" }
        if !order.isEmpty { sql += " ORDER BY " + order.joined(separator: ", ") }
        var bindings = compiler.bindings
        try appendLimits(to: &sql, &bindings)
        return (sql, bindings, columns)
    }

    private func aggregate(_ description: ExpressionDescription, compiler: inout PredicateSQL) throws -> (String, AttributeType) {
        let (column, type) = try compiler.sortExpression(description.keyPath)
        var sql: String
        var resultType: AttributeType
        switch description.function {
        case .count:
            (sql, resultType) = ("count(\(column))", .integer64)
        case .sum:
            guard type.isNumeric else {
                throw PostgresDataError.invalidRequest("sum needs a number, and \(description.keyPath) is \(type)")
            }
            (sql, resultType) = type.isInteger ? ("coalesce(sum(\(column)), 0)::bigint", .integer64) : ("coalesce(sum(\(column)), 0)", type)
        case .average:
            guard type.isNumeric else {
                throw PostgresDataError.invalidRequest("average needs a number, and \(description.keyPath) is \(type)")
            }
            (sql, resultType) = ("avg(\(column))::double precision", .double)
        case .min, .max:
            (sql, resultType) = ("\(description.function.rawValue)(\(column))", type)
        }
        if let cast = description.expressionResultType, cast != resultType {
            sql = "(\(sql))::\(cast.sqlType)"
            resultType = cast
        }
        return (sql, resultType)
    }

    /// The destination entity when `key` ends at a to-one relationship (its values are IDs).
    /// `objectID` (or `self`), alone or at the end of a to-one path, is the object's ID
    /// (Core Data's evaluated object with the `objectIDAttributeType` result type).
    private static func relationshipDestination(of key: String, in start: EntityDescription) throws -> EntityDescription? {
        var entity = start
        let components = key.split(separator: ".").map(String.init)
        for (position, name) in components.enumerated() {
            if (name == "objectID" || name == "self") && position == components.count - 1 && entity.propertyIndex(named: name) == nil {
                return entity
            }
            guard let index = entity.propertyIndex(named: name), entity.properties[index].relationship != nil else { return nil }
            entity = entity.destination(of: index)
            if position == components.count - 1 { return entity }
        }
        return nil
    }
}

extension FetchSortDescriptor {
    /// The `ORDER BY` term of this descriptor over the expression `sql` of type `type`.
    func orderTerm(_ sql: String, type: AttributeType?) -> String {
        let expression = caseInsensitive && type == .string ? "lower(\(sql))" : sql
        return "\(expression) \(ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST")"
    }
}

extension Array where Element == String? {
    /// The conditions given, joined by `AND` (each parenthesized when there are several);
    /// nil for none.
    var conjunction: String? {
        let conditions = compactMap { $0 }
        if conditions.count <= 1 { return conditions.first }
        return conditions.map { "(\($0))" }.joined(separator: " AND ")
    }
}
