import PostgresClient

/// The primary keys a save (or `obtainPermanentIDs`) needs, planned without a server: one
/// statement that takes `count` values of each entity's identity sequence, and the reading
/// of its rows back into keys per entity.
struct KeyAllocation {
    /// The entities asked for, in the order of the statement's positions.
    let entities: [EntityDescription]
    let sql: String
    let bindings: PostgresBindings

    /// Nil when no entity needs a key. `sequences` are the identity sequences by model index,
    /// as the catalog named them (`pg_get_serial_sequence`).
    init?(_ counts: [(EntityDescription, Int)], sequences: [String]) throws {
        let wanted = counts.filter { $0.1 > 0 }
        guard !wanted.isEmpty else { return nil }
        var bindings = PostgresBindings()
        var parts: [String] = []
        for (position, (entity, count)) in wanted.enumerated() {
            // The sequence's name comes from the catalog, not from input; as a literal it is
            // resolved once, where a `$n::regclass` parameter would be looked up for every row.
            try bindings.append(Int64(count))
            let sequence = quoteLiteral(sequences[entity.modelIndex])
            parts.append("SELECT \(position)::int4, array_agg(nextval(\(sequence)::regclass)) FROM generate_series(1, $\(bindings.count))")
        }
        entities = wanted.map(\.0)
        sql = parts.joined(separator: " UNION ALL ")
        self.bindings = bindings
    }

    /// The keys per entity from the statement's rows (position, keys), ascending.
    func keys(from rows: [(Int32, [Int64])]) -> [EntityDescription: [Int64]] {
        var result: [EntityDescription: [Int64]] = [:]
        for (position, keys) in rows where entities.indices.contains(Int(position)) {
            // array_agg keeps the order of generate_series: already ascending, checked cheaply.
            let ascending = zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 }
            result[entities[Int(position)]] = ascending ? keys : keys.sorted()
        }
        return result
    }
}
