import Foundation
import PostgresClient

/// The history of one save or batch request, planned as one statement that writes the
/// transaction row and its change rows together (one change row per entity and kind of
/// change; the keys travel as ranges of consecutive keys, one array of starts and one of
/// ends for all rows, sliced per row on the server into an `int8multirange`).
struct HistoryRecord: Sendable {
    /// Who writes: the context's author and name, and the coordinator.
    struct Origin: Sendable {
        var author: String?
        var contextName: String?
        var instanceID: UUID
    }

    struct Group: Sendable {
        var entity: EntityDescription
        var changeType: PersistentHistoryChange.ChangeType
        var keys: [Int64]
        var updatedProperties: [String]?
        /// For deletions: the deleted objects' kept values (``HistoryTombstones``).
        var tombstones: String? = nil
    }

    var origin: Origin
    var groups: [Group] = []

    init(origin: Origin) {
        self.origin = origin
    }

    /// Adds keys of one entity and kind of change (nothing when `keys` is empty).
    mutating func record(_ entity: EntityDescription, _ changeType: PersistentHistoryChange.ChangeType, keys: [Int64],
                         updatedProperties: [String]? = nil) {
        guard !keys.isEmpty else { return }
        groups.append(Group(entity: entity, changeType: changeType, keys: keys, updatedProperties: updatedProperties))
    }

    /// Records objects of any entities, grouped by entity.
    /// Attaches the tombstones of `entity`'s deletions recorded before.
    mutating func attachTombstones(_ tombstones: String?, to entity: EntityDescription) {
        guard let tombstones, let index = groups.firstIndex(where: { $0.entity === entity && $0.changeType == .delete }) else { return }
        groups[index].tombstones = tombstones
    }

    mutating func record(_ ids: [ManagedObjectID], _ changeType: PersistentHistoryChange.ChangeType) {
        for (entity, group) in SavePlan.grouped(ids, by: \.entity) {
            record(entity, changeType, keys: group.compactMap(\.primaryKey))
        }
    }

    /// Writes the record on `connection`, inside the transaction of the changes it records
    /// (nothing when no row changed).
    func write(on connection: Connection) async throws {
        guard !groups.isEmpty else { return }
        let (sql, bindings) = try statement()
        try await connection.query(sql, bindings: bindings)
    }

    /// `WITH t AS (INSERT INTO transaction … RETURNING id) INSERT INTO change SELECT …`.
    func statement() throws -> (sql: String, bindings: PostgresBindings) {
        var bindings = PostgresBindings()
        try bindings.append(origin.author)
        try bindings.append(origin.contextName)
        try bindings.append(origin.instanceID)
        var firsts: [Int32] = []
        var lasts: [Int32] = []
        var lower: [Int64] = []
        var upper: [Int64] = []
        for group in groups {
            firsts.append(Int32(lower.count + 1))
            for range in Self.ranges(of: group.keys) {
                lower.append(range.lowerBound)
                upper.append(range.upperBound)
            }
            lasts.append(Int32(lower.count))
        }
        try bindings.append(groups.map(\.entity.name))
        try bindings.append(groups.map(\.changeType.rawValue))
        try bindings.append(groups.map { $0.updatedProperties?.joined(separator: ",") })
        try bindings.append(firsts)
        try bindings.append(lasts)
        try bindings.append(lower)
        try bindings.append(upper)
        try bindings.append(groups.map(\.tombstones))
        let sql = """
            WITH t AS (INSERT INTO \(HistorySchema.transactions) ("author", "context_name", "origin") VALUES ($1, $2, $3) RETURNING "id") \
            INSERT INTO \(HistorySchema.changes) ("transaction_id", "entity", "change_type", "object_keys", "updated_properties", "tombstones") \
            SELECT t."id", g.e, g.c, \
            (SELECT range_agg(int8range(r.l, r.u)) FROM unnest(($9::bigint[])[g.s:g.f], ($10::bigint[])[g.s:g.f]) AS r(l, u)), \
            string_to_array(g.p, ','), g.z::jsonb \
            FROM t, unnest($4::text[], $5::int2[], $6::text[], $7::int4[], $8::int4[], $11::text[]) AS g(e, c, p, s, f, z)
            """
        return (sql, bindings)
    }

    /// Keys as ranges of consecutive keys (half-open), ascending.
    static func ranges(of keys: [Int64]) -> [Range<Int64>] {
        let sorted = zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 } ? keys : keys.sorted()
        var ranges: [Range<Int64>] = []
        for key in sorted {
            if let last = ranges.last, last.upperBound >= key {
                ranges[ranges.count - 1] = last.lowerBound..<max(last.upperBound, key + 1)
            } else {
                ranges.append(key..<(key + 1))
            }
        }
        return ranges
    }

    /// The keys of an `int8multirange` in PostgreSQL's text form (`{[1,5),[7,8)}`).
    static func keys(ofMultirange text: String) -> [Int64] {
        var keys: [Int64] = []
        for part in text.split(whereSeparator: { "{}[)".contains($0) }) where part != "," {
            let bounds = part.split(separator: ",").compactMap { Int64($0) }
            guard bounds.count == 2, bounds[0] < bounds[1] else { continue }
            keys.append(contentsOf: bounds[0]..<bounds[1])
        }
        return keys
    }

    /// Wraps a data-changing statement `changing` (whose `RETURNING` list starts with the
    /// row's key, named `id`) so that the same statement records its rows in history:
    /// the keys never leave the server. `select` reads the changed rows from `u`.
    static func wrapping(_ changing: String, bindings: inout PostgresBindings, origin: Origin, entity: EntityDescription,
                         changeType: PersistentHistoryChange.ChangeType, updatedProperties: [String]?, select: String) throws -> String {
        try bindings.append(origin.author)
        let author = bindings.count
        try bindings.append(origin.contextName)
        try bindings.append(origin.instanceID)
        try bindings.append(entity.name)
        try bindings.append(changeType.rawValue)
        try bindings.append(updatedProperties)
        return """
            WITH t AS (INSERT INTO \(HistorySchema.transactions) ("author", "context_name", "origin") \
            VALUES ($\(author), $\(author + 1), $\(author + 2)) RETURNING "id"), \
            u AS (\(changing)), \
            h AS (INSERT INTO \(HistorySchema.changes) ("transaction_id", "entity", "change_type", "object_keys", "updated_properties") \
            SELECT t."id", $\(author + 3), $\(author + 4), range_agg(int8range(u."id", u."id" + 1)), $\(author + 5)::text[] \
            FROM t, u GROUP BY t."id") \
            \(select)
            """
    }
}
