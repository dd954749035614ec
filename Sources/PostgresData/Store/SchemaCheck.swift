import PostgresClient

/// Compares the live schema with the model when a store loads, and creates the model's
/// tables when none exist and the caller allows it.
struct SchemaCheck {
    let model: ManagedObjectModel
    /// During a staged migration's custom step: columns the model requires may still allow
    /// NULL (the stage sets NOT NULL once the step has filled them).
    var allowsPendingNotNull = false

    /// Checks (or creates) the schema; returns the identity sequence of each entity.
    func prepare(_ connection: Connection, create: Bool) async throws -> [String] {
        let plan = SchemaPlan(model: model)
        let expected = expectedColumns(plan)
        let constraints = Dictionary(grouping: plan.constraints.values, by: \.tableName)
            .mapValues { $0.sorted { $0.name < $1.name } }
        let triggers = plan.described.mapValues { $0.triggers.map(\.name) }.filter { !$0.value.isEmpty }
        var differences = try await compare(connection, expected: expected, expectedConstraints: constraints, expectedTriggers: triggers)
        let missingTables = Set(differences.compactMap(\.missingTable))
        if !differences.isEmpty && create && differences.allSatisfy({ $0.missingTable != nil }) {
            try await connection.withTransaction { connection in
                // Several processes may load the same store at once.
                try await connection.query("SELECT pg_advisory_xact_lock(hashtext('postgres_data_schema'))")
                let stillMissing = try await self.existingTables(connection, Array(missingTables))
                let toCreate = missingTables.subtracting(stillMissing)
                let statements = toCreate.sorted().flatMap { plan.statementsByTable[$0] ?? [] }
                // Entity tables before join tables, whose columns reference them.
                let entityTables = Set(model.entities.map { "CREATE TABLE \(quoteIdentifier($0.tableName)) (" })
                let creates = statements.filter { $0.hasPrefix("CREATE TABLE") }
                    .sorted { entityTables.contains(where: $0.hasPrefix) && !entityTables.contains(where: $1.hasPrefix) }
                for statement in creates + statements.filter({ !$0.hasPrefix("CREATE TABLE") }) {
                    _ = try await connection.execute(script: statement)
                }
            }
            differences = try await compare(connection, expected: expected, expectedConstraints: constraints, expectedTriggers: triggers)
        }
        guard differences.isEmpty else { throw PostgresDataError.schemaMismatch(differences.map(\.description)) }
        let tables = model.entities.map(\.tableName)
        var sequences: [String] = []
        for row in try await connection.query(
            "SELECT pg_get_serial_sequence(quote_ident(t), 'id') FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n", tables) {
            sequences.append(try row.decode(String?.self, at: 0) ?? "")
        }
        if let index = sequences.firstIndex(of: "") {
            throw PostgresDataError.schemaMismatch(["table \"\(tables[index])\" has no identity or serial \"id\" column"])
        }
        return sequences
    }

    struct ExpectedColumn {
        var table: String
        var column: String
        var type: String
        var nullable: Bool
    }

    enum Difference: CustomStringConvertible {
        case table(String)
        case column(table: String, column: String, type: String)
        case type(table: String, column: String, expected: String, actual: String)
        case nullability(table: String, column: String, nullable: Bool)
        case extraRequiredColumn(table: String, column: String)
        case constraint(table: String, SchemaConstraint)
        case trigger(table: String, name: String)

        var missingTable: String? {
            if case .table(let name) = self { return name }
            return nil
        }

        var description: String {
            switch self {
            case .table(let table): "table \"\(table)\" is missing"
            case .column(let table, let column, let type): "column \"\(table)\".\"\(column)\" (\(type)) is missing"
            case .type(let table, let column, let expected, let actual):
                "column \"\(table)\".\"\(column)\" is \(actual), the model says \(expected)"
            case .nullability(let table, let column, let nullable):
                "column \"\(table)\".\"\(column)\" is \(nullable ? "NOT NULL" : "nullable"), the model says it is \(nullable ? "optional" : "required")"
            case .extraRequiredColumn(let table, let column):
                "column \"\(table)\".\"\(column)\" is NOT NULL without a default and not in the model: inserts would fail"
            case .trigger(let table, let name):
                "trigger \"\(name)\" on \"\(table)\" is missing: a derived attribute it keeps current would go stale (postgres-data diff writes it)"
            case .constraint(let table, let constraint):
                "constraint \"\(constraint.name)\" on \"\(table)\" is missing (\(constraint.entityName).\(constraint.keys.joined(separator: ", ")): \(constraint.rule)): the database does not enforce it"
            }
        }
    }

    private func expectedColumns(_ plan: SchemaPlan) -> [String: [ExpectedColumn]] {
        var result: [String: [ExpectedColumn]] = [:]
        for entity in model.entities {
            var columns = [ExpectedColumn(table: entity.tableName, column: "id", type: "bigint", nullable: false)]
            for index in entity.columnIndices {
                switch entity.properties[index] {
                case .attribute(let attribute):
                    columns.append(ExpectedColumn(table: entity.tableName, column: attribute.columnName,
                                                  type: attribute.attributeType.sqlType, nullable: attribute.isOptional))
                case .relationship(let relationship):
                    columns.append(ExpectedColumn(table: entity.tableName, column: entity.columnName(of: index),
                                                  type: "bigint", nullable: relationship.isOptional))
                }
            }
            for column in entity.positionColumns {
                columns.append(ExpectedColumn(table: entity.tableName, column: column, type: "double precision", nullable: false))
            }
            if entity.isInHierarchy {
                // One table per hierarchy: the columns the plan describes for it.
                if entity.superentity == nil, let table = plan.described[entity.tableName] {
                    result[table.name] = table.columns.map { ExpectedColumn(table: table.name, column: $0.name, type: $0.type, nullable: $0.isNullable) }
                }
            } else {
                result[entity.tableName] = columns
            }
            for index in entity.derivedRelationshipIndices {
                if case .joinTable(let join) = entity.storage(of: index) {
                    let positions = plan.described[join.name]?.columns.filter { $0.type == "double precision" }.map(\.name) ?? []
                    result[join.name] = [
                        ExpectedColumn(table: join.name, column: join.sourceColumn, type: "bigint", nullable: false),
                        ExpectedColumn(table: join.name, column: join.destinationColumn, type: "bigint", nullable: false),
                    ] + positions.map { ExpectedColumn(table: join.name, column: $0, type: "double precision", nullable: false) }
                }
            }
        }
        return result
    }

    private func existingTables(_ connection: Connection, _ tables: [String]) async throws -> Set<String> {
        var result: Set<String> = []
        for row in try await connection.query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ANY($1)", tables) {
            result.insert(try row.decode(String.self, at: 0))
        }
        return result
    }

    private func compare(_ connection: Connection, expected: [String: [ExpectedColumn]],
                         expectedConstraints: [String: [SchemaConstraint]], expectedTriggers: [String: [String]]) async throws -> [Difference] {
        var live: [String: [String: (type: String, nullable: Bool, hasDefault: Bool)]] = [:]
        for row in try await connection.query("""
            SELECT table_name::text, column_name::text, data_type::text, is_nullable = 'YES', column_default IS NOT NULL OR is_identity = 'YES'
            FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ANY($1)
            """, Array(expected.keys)) {
            let (table, column, type, nullable, hasDefault) = try row.decode((String, String, String, Bool, Bool).self)
            live[table, default: [:]][column] = (type, nullable, hasDefault)
        }
        var constraintNames: Set<String> = []
        for row in try await connection.query("""
            SELECT c.conname::text FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = current_schema() AND t.relname = ANY($1)
            """, Array(expected.keys)) {
            constraintNames.insert(try row.decode(String.self, at: 0))
        }
        var differences: [Difference] = []
        if !expectedTriggers.isEmpty {
            var triggerNames: Set<String> = []
            for row in try await connection.query("""
                SELECT g.tgname::text FROM pg_trigger g JOIN pg_class t ON t.oid = g.tgrelid
                JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = current_schema() AND t.relname = ANY($1)
                """, Array(expectedTriggers.keys)) {
                triggerNames.insert(try row.decode(String.self, at: 0))
            }
            for (table, names) in expectedTriggers.sorted(by: { $0.key < $1.key }) where live[table] != nil {
                for name in names where !triggerNames.contains(name) { differences.append(.trigger(table: table, name: name)) }
            }
        }
        for (table, constraints) in expectedConstraints where live[table] != nil {
            for constraint in constraints where !constraintNames.contains(constraint.name) {
                differences.append(.constraint(table: table, constraint))
            }
        }
        for table in expected.keys.sorted() {
            guard let columns = live[table] else {
                differences.append(.table(table))
                continue
            }
            let expectedNames = Set(expected[table]!.map(\.column))
            for column in expected[table]! {
                guard let actual = columns[column.column] else {
                    differences.append(.column(table: table, column: column.column, type: column.type))
                    continue
                }
                if actual.type != column.type {
                    differences.append(.type(table: table, column: column.column, expected: column.type, actual: actual.type))
                } else if actual.nullable != column.nullable && !(allowsPendingNotNull && actual.nullable) {
                    differences.append(.nullability(table: table, column: column.column, nullable: !actual.nullable))
                }
            }
            for (name, actual) in columns.sorted(by: { $0.key < $1.key })
            where !expectedNames.contains(name) && !actual.nullable && !actual.hasDefault {
                differences.append(.extraRequiredColumn(table: table, column: name))
            }
        }
        return differences
    }
}
