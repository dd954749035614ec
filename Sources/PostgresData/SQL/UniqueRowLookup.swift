import PostgresClient

/// The statement that finds the rows holding given values of a unique key: after a save
/// failed on the key, it tells which rows the save's objects collided with.
struct UniqueRowLookup: Sendable {
    let sql: String
    let bindings: PostgresBindings

    /// Rows of `entity` whose `key` equals one of `candidates` (each a value per key
    /// property, in the key's order), each row selected as a snapshot followed by the
    /// candidate's position in `candidates`.
    init(_ entity: EntityDescription, key: UniqueKey, candidates: [[AttributeValue]]) throws {
        var bindings = PostgresBindings()
        try bindings.append(candidates.indices.map { Int32($0) })
        var casts = ["$1::int4[]"]
        var conditions: [String] = []
        for (position, index) in key.indices.enumerated() {
            let type = SavePlan.columnType(entity, index)
            try ValueCoding.appendArray(candidates.map { $0[position] }, of: type, to: &bindings)
            casts.append("$\(bindings.count)::\(type.sqlType)[]")
            conditions.append("t.\(quoteIdentifier(entity.columnName(of: index))) = u.c\(position)")
        }
        let aliases = ["i"] + key.indices.indices.map { "c\($0)" }
        sql = "SELECT \(PersistentStoreCoordinator.selectList(entity)), u.i FROM unnest(\(casts.joined(separator: ", "))) AS u(\(aliases.joined(separator: ", "))) JOIN \(quoteIdentifier(entity.tableName)) AS t ON \(conditions.joined(separator: " AND "))"
        self.bindings = bindings
    }
}
