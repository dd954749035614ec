import PostgresClient

extension SchemaPlan {
    /// The SQL of a generated column's expression (bare column names, constants written
    /// out), cast to the attribute's type; nil when the compiler cannot spell it.
    static func generationExpression(_ value: PredicateValue, of attribute: AttributeDescription, in entity: EntityDescription) -> String? {
        var compiler = PredicateSQL(entity: entity)
        compiler.inlinesConstants = true
        compiler.rootAlias = ""
        guard let (sql, _) = try? compiler.value(value, expected: attribute.attributeType, key: attribute.name),
              compiler.joins.isEmpty, compiler.subqueryCount == 0 else { return nil }
        return "(\(sql))::\(attribute.attributeType.sqlType)"
    }

    /// The rows behind a derived aggregate: the table holding the relationship's rows, its
    /// column holding the owner's key, and the value each row adds (`1` to count, the summed
    /// column for a sum).
    static func aggregateSource(_ derivation: Derivation, of entity: EntityDescription) -> (table: String, owner: String, value: String)? {
        switch derivation {
        case .expression:
            return nil
        case .count(let relationship):
            switch entity.storage(of: relationship) {
            case .joinTable(let join):
                return (join.name, join.sourceColumn, "1")
            case .inverseForeignKey:
                let destination = entity.destination(of: relationship)
                guard case .foreignKey(let column) = destination.storage(of: entity.inverseIndex(of: relationship)) else { return nil }
                return (destination.tableName, column, "1")
            case .foreignKey:
                return nil
            }
        case .sum(let relationship, let attribute):
            let destination = entity.destination(of: relationship)
            guard case .foreignKey(let column) = destination.storage(of: entity.inverseIndex(of: relationship)) else { return nil }
            return (destination.tableName, column, "coalesce(\(quoteIdentifier(destination.columnName(of: attribute))), 0)")
        }
    }

    /// For each derived aggregate of `entity`: a statement-level trigger on each change of
    /// the relationship's rows that adds the change to the owners' column (`c = c + Δ`,
    /// which concurrent transactions compose correctly, and owners whose Δ is 0 are not
    /// written), and a row trigger that gives a new owner the aggregate of rows written
    /// before it in the transaction.
    mutating func addDerivationTriggers(of entity: EntityDescription) {
        for index in entity.derivations.keys.sorted() {
            guard let derivation = entity.derivations[index], let attribute = entity.properties[index].attribute,
                  let source = Self.aggregateSource(derivation, of: entity) else { continue }
            let owner = quoteIdentifier(entity.tableName)
            let column = quoteIdentifier(attribute.columnName)
            let rows = quoteIdentifier(source.table)
            let key = quoteIdentifier(source.owner)
            let type = attribute.attributeType.sqlType
            func update(_ select: String) -> String {
                "UPDATE \(owner) AS p SET \(column) = p.\(column) + d.v FROM (SELECT k, sum(v)::\(type) AS v FROM (\(select)) AS x WHERE k IS NOT NULL GROUP BY k) AS d WHERE p.\"id\" = d.k AND d.v <> 0"
            }
            let added = "SELECT \(key) AS k, \(source.value) AS v FROM new_rows"
            let removed = "SELECT \(key) AS k, -(\(source.value)) AS v FROM old_rows"
            let function = SchemaNaming.identifier(entity.tableName, attribute.columnName, "derive")
            let functionSQL = """
                CREATE OR REPLACE FUNCTION \(quoteIdentifier(function))() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'INSERT' THEN
                        \(update(added));
                    ELSIF TG_OP = 'DELETE' THEN
                        \(update(removed));
                    ELSE
                        \(update("\(added) UNION ALL \(removed)"));
                    END IF;
                    RETURN NULL;
                END
                $$
                """
            let backfill = "UPDATE \(owner) AS p SET \(column) = coalesce((SELECT sum(\(source.value))::\(type) FROM \(rows) AS r WHERE r.\(key) = p.\"id\"), 0)"
            for (event, referencing) in [("insert", "NEW TABLE AS new_rows"), ("update", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
                                         ("delete", "OLD TABLE AS old_rows")] {
                let name = SchemaNaming.identifier(source.table, entity.tableName, attribute.columnName, event)
                let statement = "CREATE TRIGGER \(quoteIdentifier(name)) AFTER \(event.uppercased()) ON \(rows) REFERENCING \(referencing) FOR EACH STATEMENT EXECUTE FUNCTION \(quoteIdentifier(function))()"
                add(table: source.table, trigger: .init(name: name, definition: statement, function: functionSQL, backfill: event == "insert" ? backfill : nil))
            }
            let start = SchemaNaming.identifier(entity.tableName, attribute.columnName, "start")
            let startSQL = """
                CREATE OR REPLACE FUNCTION \(quoteIdentifier(start))() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    NEW.\(column) := coalesce((SELECT sum(\(source.value))::\(type) FROM \(rows) AS r WHERE r.\(key) = NEW."id"), 0);
                    RETURN NEW;
                END
                $$
                """
            let startTrigger = "CREATE TRIGGER \(quoteIdentifier(start)) BEFORE INSERT ON \(owner) FOR EACH ROW EXECUTE FUNCTION \(quoteIdentifier(start))()"
            add(table: entity.tableName, trigger: .init(name: start, definition: startTrigger, function: startSQL))
        }
    }

    private mutating func add(table: String, trigger: SchemaDescription.Trigger) {
        for statement in [trigger.function, trigger.definition] where !triggers.contains(statement) {
            triggers.append(statement)
            record(table, statement)
        }
        describe(table, trigger: trigger)
    }
}
