import PostgresClient

extension SavePlan {
    /// How a save resolves a new object whose unique key a row already holds (a merge policy
    /// other than ``MergePolicy/error``).
    enum UniquenessResolution: Sendable {
        /// The row takes the object's values; the object takes the row's ID.
        case objectTrump
        /// The object takes the row's ID and values; the row is left as it is.
        case storeTrump
    }

    /// Inserts of entities with a unique key, resolved against existing rows by
    /// `INSERT … ON CONFLICT (key)` in the same statement. Each such statement returns only
    /// the rows an object was resolved to — the row now, then the key allocated to the
    /// object (`proposed`) — and repoints, in the same statement, every foreign key this
    /// save wrote with the allocated key. Entities that reference others
    /// go first, so that a later statement repoints their rows.
    mutating func planUpserts(_ inserts: [Insert], resolution: UniquenessResolution, history: HistoryRecord.Origin?) throws {
        let groups = Self.grouped(inserts, by: \.entity).sorted { lhs, rhs in
            Self.references(lhs.0, rhs.0) && !Self.references(rhs.0, lhs.0)
        }
        for (entity, rows) in groups {
            guard let key = entity.uniqueKeys.first else { continue }
            insertsRows = true
            var bindings = PostgresBindings()
            try bindings.append(rows.map(\.key))
            let columns = entity.writableColumnIndices
            var casts = ["$1::bigint[]"]
            for index in columns {
                let type = Self.columnType(entity, index)
                try ValueCoding.appendArray(rows.map { $0.values[index] }, of: type, to: &bindings)
                casts.append("$\(bindings.count)::\(type.sqlType)[]")
            }
            let sql = try Self.upsertSQL(entity, key: key, casts: casts, rowCount: rows.count, resolution: resolution,
                                         history: history, bindings: &bindings)
            statements.append(Statement(sql: sql, bindings: bindings, check: .upserts(entity: entity)))
        }
    }

    /// The statement of ``planUpserts(_:resolution:history:)`` for one entity; `casts` are
    /// the typed arrays of keys and column values already bound.
    static func upsertSQL(_ entity: EntityDescription, key: UniqueKey, casts: [String], rowCount: Int,
                          resolution: UniquenessResolution, history: HistoryRecord.Origin?,
                          bindings: inout PostgresBindings) throws -> String {
        let table = quoteIdentifier(entity.tableName)
        let columns = entity.writableColumnIndices
        let names = columns.map { quoteIdentifier(entity.columnName(of: $0)) }
        let aliases = ["k"] + columns.indices.map { "c\($0)" }
        let target = key.indices.map { quoteIdentifier(entity.columnName(of: $0)) }
        func matches(_ row: String) -> String {
            key.indices.map { index in
                let position = columns.firstIndex(of: index) ?? 0
                return "\(row).\(quoteIdentifier(entity.columnName(of: index))) = u.c\(position)"
            }.joined(separator: " AND ")
        }
        var parts = [
            "u AS (SELECT * FROM unnest(\(casts.joined(separator: ", "))) AS u(\(aliases.joined(separator: ", "))))",
        ]
        let named = entity.isInHierarchy ? (", \(quoteIdentifier(EntityDescription.discriminatorColumn))", ", \(quoteLiteral(entity.name))::text") : ("", "")
        let insert = "INSERT INTO \(table) AS t (\"id\", \(names.joined(separator: ", "))\(named.0)) SELECT *\(named.1) FROM u ON CONFLICT (\(target.joined(separator: ", ")))"
        let select: String
        switch resolution {
        case .objectTrump:
            let assigned = names.filter { !target.contains($0) }
            let assignments = (assigned.isEmpty ? target : assigned).map { "\($0) = excluded.\($0)" }
            parts.append("w AS (\(insert) DO UPDATE SET \(assignments.joined(separator: ", ")) RETURNING \(PersistentStoreCoordinator.selectList(entity)))")
            // A row whose key holds NULL conflicts with nothing and matches no input by key.
            parts.append("m AS (SELECT w.*, coalesce(u.k, w.\"id\") AS proposed FROM w LEFT JOIN u ON \(matches("w")))")
            select = "SELECT * FROM m WHERE m.\"id\" <> m.proposed"
        case .storeTrump:
            parts.append("w AS (\(insert) DO NOTHING RETURNING t.\"id\")")
            parts.append("m AS (SELECT \(PersistentStoreCoordinator.selectList(entity, alias: "e")), u.k AS proposed FROM u JOIN \(table) AS e ON \(matches("e")) WHERE NOT EXISTS (SELECT FROM w WHERE w.\"id\" = u.k))")
            // A row another transaction committed after this statement's snapshot stops the
            // insert yet is invisible to `m`: the statement then fails and the save runs again.
            select = "SELECT m.* FROM (SELECT count(*) AS n FROM w) AS c CROSS JOIN (SELECT count(*) AS n FROM m) AS d LEFT JOIN m ON true WHERE CASE WHEN c.n + d.n = \(rowCount) THEN m.proposed IS NOT NULL ELSE ('\(uniquenessCheckMarker): ' || c.n + d.n || ' of \(rowCount) rows')::boolean END"
        }
        if let history {
            parts.append(try historyPart(entity, resolution: resolution, origin: history, bindings: &bindings))
        }
        parts += repointing(entity)
        return "WITH \(parts.joined(separator: ", ")) \(select)"
    }

    /// The history of an upsert, written by the statement itself since only it knows which
    /// rows it inserted and which it resolved: into the history transaction the save's
    /// history statement, sent before, opened.
    private static func historyPart(_ entity: EntityDescription, resolution: UniquenessResolution, origin: HistoryRecord.Origin,
                                    bindings: inout PostgresBindings) throws -> String {
        try bindings.append(entity.name)
        let name = bindings.count
        let transaction = "(SELECT \"id\" FROM \(HistorySchema.transactions) WHERE \"xid\" = pg_current_xact_id())"
        let into = "INSERT INTO \(HistorySchema.changes) (\"transaction_id\", \"entity\", \"change_type\", \"object_keys\", \"updated_properties\")"
        switch resolution {
        case .objectTrump:
            try bindings.append(entity.writableColumnIndices.map { entity.properties[$0].name })
            return "h AS (\(into) SELECT x.\"id\", $\(name), g.t, range_agg(int8range(g.k, g.k + 1)), CASE WHEN g.t = 1 THEN $\(name + 1)::text[] END FROM \(transaction) AS x, (SELECT m.\"id\" AS k, (CASE WHEN m.\"id\" = m.proposed THEN 0 ELSE 1 END)::int2 AS t FROM m) AS g GROUP BY x.\"id\", g.t)"
        case .storeTrump:
            return "h AS (\(into) SELECT x.\"id\", $\(name), 0::int2, range_agg(int8range(w.\"id\", w.\"id\" + 1)), NULL FROM \(transaction) AS x, w GROUP BY x.\"id\")"
        }
    }

    /// Statements that repoint the foreign keys this save wrote with a key allocated to an
    /// object that resolved to an existing row (foreign keys are checked at commit).
    private static func repointing(_ entity: EntityDescription) -> [String] {
        var parts: [String] = []
        for index in entity.relationshipIndices {
            guard case .inverseForeignKey = entity.storage(of: index) else { continue }
            let destination = entity.destination(of: index)
            guard case .foreignKey(let column) = destination.storage(of: entity.inverseIndex(of: index)) else { continue }
            let name = quoteIdentifier(column)
            parts.append("r\(parts.count) AS (UPDATE \(quoteIdentifier(destination.tableName)) AS r SET \(name) = m.\"id\" FROM m WHERE r.\(name) = m.proposed AND m.\"id\" <> m.proposed)")
        }
        return parts
    }

    /// Join-table rows naming objects of `upserts`, written after them: a join table's
    /// foreign keys are checked at once, and the key of such an object is the one of the
    /// row now holding its unique key (its own, or the row it resolved to). Keys of other
    /// objects are written as they are.
    mutating func planJoinInserts(_ changes: [JoinChange], after upserts: [Insert]) throws {
        var upserted: [ManagedObjectID: [AttributeValue]] = [:]
        for insert in upserts { upserted[ManagedObjectID(entity: insert.entity, primaryKey: insert.key)] = insert.values }
        var groups: [String: [JoinChange]] = [:]
        for change in Set(changes.map(\.normalised)) { groups[change.table.name, default: []].append(change) }
        for name in groups.keys.sorted() {
            let rows = groups[name]!
            let first = rows[0]
            var bindings = PostgresBindings()
            try bindings.append(rows.map(\.source))
            try bindings.append(rows.map(\.destination))
            var casts = ["$1::bigint[]", "$2::bigint[]"]
            var aliases = ["k0", "k1"]
            var joins: [String] = []
            var keys = ["x.k0", "x.k1"]
            for (side, entity) in [first.sourceEntity, first.destinationEntity].enumerated() {
                guard let key = entity.uniqueKeys.first else { continue }
                var conditions: [String] = []
                for (position, index) in key.indices.enumerated() {
                    let type = Self.columnType(entity, index)
                    let values = rows.map { row in
                        upserted[ManagedObjectID(entity: entity, primaryKey: side == 0 ? row.source : row.destination)]?[index] ?? .null
                    }
                    try ValueCoding.appendArray(values, of: type, to: &bindings)
                    casts.append("$\(bindings.count)::\(type.sqlType)[]")
                    aliases.append("v\(side)_\(position)")
                    conditions.append("e\(side).\(quoteIdentifier(entity.columnName(of: index))) = x.v\(side)_\(position)")
                }
                joins.append("LEFT JOIN \(quoteIdentifier(entity.tableName)) AS e\(side) ON \(conditions.joined(separator: " AND "))")
                keys[side] = "coalesce(e\(side).\"id\", x.k\(side))"
            }
            let columns = "\(quoteIdentifier(first.table.sourceColumn)), \(quoteIdentifier(first.table.destinationColumn))"
            let sql = "INSERT INTO \(quoteIdentifier(name)) (\(columns)) SELECT \(keys.joined(separator: ", ")) FROM unnest(\(casts.joined(separator: ", "))) AS x(\(aliases.joined(separator: ", "))) \(joins.joined(separator: " ")) ON CONFLICT DO NOTHING"
            statements.append(Statement(sql: sql, bindings: bindings, check: .none))
        }
    }

    /// The text a failed upsert check casts to `boolean`, so that its error names it.
    static let uniquenessCheckMarker = "postgres-data uniqueness check"

    /// True when `error` is a failed check of a store-trump upsert: a conflicting row was
    /// committed by another transaction while the statement ran; the save runs again.
    static func isFailedUniquenessCheck(_ error: PostgresError) -> Bool {
        error.sqlState?.rawValue == "22P02" && error.message.contains(uniquenessCheckMarker)
    }
}
