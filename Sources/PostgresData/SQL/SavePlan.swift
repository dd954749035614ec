import PostgresClient

/// The statements of one save, computed purely from the context's changes: one `INSERT …
/// SELECT FROM unnest(…)` per entity (a binary `COPY` for many rows), one version-checked `UPDATE … FROM unnest(…)` per
/// entity and set of changed columns, join-table changes, then one version-checked
/// `DELETE … USING unnest(…)` per entity. Round trips do not grow with the number of objects.
struct SavePlan: Sendable {
    // Entity descriptions are immortal (``EntityDescription``): the rows of a plan, by the
    // hundred thousand, refer to theirs without reference counting, as IDs do.
    struct Insert {
        unowned(unsafe) var entity: EntityDescription
        var key: Int64
        /// One value per property; relationships already resolved to permanent IDs.
        var values: [AttributeValue]
    }

    struct Update {
        unowned(unsafe) var entity: EntityDescription
        var key: Int64
        var version: UInt32
        var values: [AttributeValue]
        /// Column properties whose value changed.
        var changed: [Int]
    }

    struct Delete {
        unowned(unsafe) var entity: EntityDescription
        var key: Int64
        var version: UInt32
    }

    struct JoinChange: Hashable {
        var table: JoinTable
        var source: Int64
        var destination: Int64
        /// The entities whose keys ``source`` and ``destination`` are.
        var sourceEntity: EntityDescription
        var destinationEntity: EntityDescription

        /// The change as seen from the side whose column sorts first: the two sides of a
        /// pair see the join table's columns swapped.
        var normalised: JoinChange {
            table.sourceColumn <= table.destinationColumn ? self : JoinChange(
                table: JoinTable(name: table.name, sourceColumn: table.destinationColumn, destinationColumn: table.sourceColumn),
                source: destination, destination: source, sourceEntity: destinationEntity, destinationEntity: sourceEntity)
        }
    }

    enum Check: Sendable {
        /// Every key must come back from `RETURNING`; a missing one is a conflict. In a
        /// pipelined plan the statement itself fails when one is missing (see
        /// ``SavePlan/checked(_:returning:expected:)``), and the versions tell which.
        case versions(entity: EntityDescription, keys: [Int64], versions: [UInt32])
        /// An upsert (``SavePlan/planUpserts(_:resolution:history:)``): its rows are the
        /// existing rows new objects resolved to, each followed by the object's allocated key.
        case upserts(entity: EntityDescription)
        /// Rows read back after the writes, for their derived attributes.
        case refresh(entity: EntityDescription)
        case none
    }

    /// Rows for `COPY table (columns) FROM STDIN (FORMAT binary)`, encoded in advance.
    /// New rows for binary COPY, encoded as they are sent (64 KiB at a time), so that the
    /// server stores one chunk while the next is encoded.
    struct Copy: Sendable {
        var table: String
        var columns: [String]
        var rows: [Insert]
        /// The properties written after the key, in column order.
        var properties: [Int]
        /// The type of each column after the key.
        var types: [AttributeType]
        /// The entity's name, written last in a hierarchy's table (nil otherwise).
        var entityName: String?

        var rowCount: Int { rows.count }

        /// Writes every row: its key, then one field per column.
        func write(to writer: inout CopyWriter) throws {
            var values = [AttributeValue](repeating: entityName.map(AttributeValue.string) ?? .null, count: types.count)
            for row in rows {
                for (position, index) in properties.enumerated() { values[position] = row.values[index] }
                try writer.appendRow(fieldCount: types.count + 1) { buffer in
                    buffer.writeInteger(Int32(8))
                    buffer.writeInteger(row.key)
                    try ValueCoding.writeCopyFields(values, types: types, into: &buffer)
                }
            }
        }
    }

    struct Statement: Sendable {
        var sql: String
        var bindings: PostgresBindings
        var check: Check
        var copy: Copy? = nil
        /// In a pipelined plan, the statement sent right after this one that fails (division
        /// by zero, SQLSTATE 22012) unless every row it had to write now carries the
        /// transaction's own version.
        var verification: (sql: String, bindings: PostgresBindings)? = nil
    }

    /// From this many new rows of one entity on, they travel by binary COPY instead of one
    /// `INSERT … SELECT FROM unnest(…)`: COPY costs a round trip more and parses nothing.
    static let copyThreshold = 1_000

    /// Up to this many rows in all, a save is pipelined: `BEGIN`, its statements and `COMMIT`
    /// leave in one flush and it costs one round trip. Few rows keep the results (a key and a
    /// version per row) well inside the socket's buffers while the client still sends.
    static let pipelineLimit = 500

    var statements: [Statement] = []
    /// True when rows are inserted: the save then reads its transaction ID once, the version
    /// of every row it writes.
    var insertsRows = false
    /// True when new objects may resolve to existing rows (an upsert on a uniqueness
    /// constraint): their IDs are known only after the transaction.
    private(set) var upsertsRows = false
    /// True when the plan runs as one pipeline: each version-checked statement then fails by
    /// itself when a row changed underneath, so that the `COMMIT` sent behind it never
    /// commits a partial save.
    let isPipelined: Bool
    /// How many rows of each entity the plan inserts, updates and deletes (new objects that
    /// may resolve to existing rows count as inserted): what the save reports in its metrics,
    /// counted here from the plan's rows rather than from the objects again.
    let writtenRows: [(kind: WriteKind, entity: EntityDescription, count: Int)]

    /// What a save does to a row.
    enum WriteKind: String, Sendable {
        case insert, update, delete
    }

    init(inserts: [Insert], updates: [Update], deletes: [Delete], joinInserts: [JoinChange],
         joinDeletes: [JoinChange], history: HistoryRecord? = nil, uniqueness: UniquenessResolution? = nil,
         orderWrites: [OrderWrite] = [], refreshing: [(EntityDescription, [Int64])] = []) throws {
        writtenRows = Self.counted(inserts, as: .insert, by: \.entity) + Self.counted(updates, as: .update, by: \.entity)
            + Self.counted(deletes, as: .delete, by: \.entity)
        var inserts = inserts
        var upserts: [Insert] = []
        var joinInserts = joinInserts
        var upsertedJoinInserts: [JoinChange] = []
        if uniqueness != nil {
            var keyed: [EntityDescription: Bool] = [:]
            upserts = inserts.filter { insert in
                if let known = keyed[insert.entity] { return known }
                let hasKey = !insert.entity.uniqueKeys.isEmpty
                keyed[insert.entity] = hasKey
                return hasKey
            }
            if !upserts.isEmpty {
                inserts.removeAll { keyed[$0.entity] == true }
                upsertsRows = true
            }
            // Join tables' foreign keys are checked at once: rows naming a new object that
            // may resolve to an existing row are written after the upserts.
            let upserted = Set(upserts.map { ManagedObjectID(entity: $0.entity, primaryKey: $0.key) })
            func touches(_ change: JoinChange) -> Bool {
                upserted.contains(ManagedObjectID(entity: change.sourceEntity, primaryKey: change.source))
                    || upserted.contains(ManagedObjectID(entity: change.destinationEntity, primaryKey: change.destination))
            }
            upsertedJoinInserts = joinInserts.filter(touches)
            if !upsertedJoinInserts.isEmpty { joinInserts.removeAll(where: touches) }
        }
        isPipelined = inserts.count + updates.count + deletes.count + joinInserts.count + joinDeletes.count <= Self.pipelineLimit
        // Updates first: a deletion's ON DELETE SET NULL must not change rows this save
        // updates (their version check would fail). Deletions before inserts, so a new row
        // may take a unique value a deleted one held.
        try planUpdates(updates)
        try planJoinChanges(joinDeletes, insert: false)
        try planDeletes(deletes)
        try planInserts(inserts)
        try planJoinChanges(joinInserts, insert: true)
        // Upserts come last: they repoint rows written before them, and write their own
        // history into the transaction the history statement opens.
        var history = history
        if !upserts.isEmpty {
            let upserted = Set(upserts.map(\.entity))
            history?.groups.removeAll { $0.changeType == .insert && upserted.contains($0.entity) }
        }
        if let history, !statements.isEmpty || !upserts.isEmpty {
            let (sql, bindings) = try history.statement()
            statements.append(Statement(sql: sql, bindings: bindings, check: .none))
        }
        if let uniqueness, !upserts.isEmpty {
            try planUpserts(upserts, resolution: uniqueness, history: history?.origin)
            try planJoinInserts(upsertedJoinInserts, after: upserts)
        }
        try planOrder(orderWrites)
        // Last: the rows whose derived attributes (or versions) the statements before moved.
        for (entity, keys) in refreshing where !keys.isEmpty && !statements.isEmpty {
            statements.append(Statement(sql: RelationshipFetchPlan.rows(of: entity), bindings: try PostgresBindings(keys),
                                        check: .refresh(entity: entity)))
        }
    }

    var isEmpty: Bool { statements.isEmpty }

    /// The number of `elements` of each entity, entities in the order first met.
    static func counted<Element>(_ elements: [Element], as kind: WriteKind, by entity: (Element) -> EntityDescription)
        -> [(kind: WriteKind, entity: EntityDescription, count: Int)] {
        var counts: [(kind: WriteKind, entity: EntityDescription, count: Int)] = []
        forEachByEntity(elements, by: entity, met: { counts.append((kind, $0, 0)) }) { group, _ in counts[group].count += 1 }
        return counts
    }

    /// Elements grouped by entity, in first-seen order; elements all of one entity (the usual
    /// save) are their own group, not copied.
    static func grouped<Element>(_ elements: [Element], by entity: (Element) -> EntityDescription)
        -> [(EntityDescription, [Element])] {
        guard let first = elements.first.map(entity) else { return [] }
        let ofOneEntity = elements.withUnsafeBufferPointer { elements in
            elements.indices.allSatisfy { entity(elements[$0]) === first }
        }
        if ofOneEntity { return [(first, elements)] }
        var groups: [(EntityDescription, [Element])] = []
        forEachByEntity(elements, by: entity, met: { groups.append(($0, [])) }) { group, index in groups[group].1.append(elements[index]) }
        return groups
    }

    /// Calls `body` with the index of each element and the number of its entity among those met
    /// before it (`met` is told of each new one first). Saves touch few entities, so a linear search by
    /// identity beats hashing every element, and runs of one entity search nothing. Elements
    /// are read in place (a copy of each would retain what it holds).
    private static func forEachByEntity<Element>(_ elements: [Element], by entity: (Element) -> EntityDescription,
                                                 met: (EntityDescription) -> Void, _ body: (_ group: Int, _ index: Int) -> Void) {
        var entities: [EntityDescription] = []
        var last = -1
        elements.withUnsafeBufferPointer { elements in
            for index in elements.indices {
                let key = entity(elements[index])
                if last < 0 || entities[last] !== key {
                    if let known = entities.firstIndex(where: { $0 === key }) {
                        last = known
                    } else {
                        entities.append(key)
                        met(key)
                        last = entities.count - 1
                    }
                }
                body(last, index)
            }
        }
    }

    private mutating func planInserts(_ inserts: [Insert]) throws {
        for (entity, rows) in Self.grouped(inserts, by: \.entity) {
            insertsRows = true
            if rows.count >= Self.copyThreshold {
                planCopy(entity, rows)
                continue
            }
            if rows.count == 1 {
                // One row: scalar parameters, which the server parses and plans faster than unnest.
                var bindings = try PostgresBindings(rows[0].key)
                var columns = [quoteIdentifier("id")]
                var values = ["$1"]
                for index in entity.writableColumnIndices {
                    let type = Self.columnType(entity, index)
                    try ValueCoding.append(rows[0].values[index], of: type, to: &bindings)
                    columns.append(quoteIdentifier(entity.columnName(of: index)))
                    values.append("$\(bindings.count)::\(type.sqlType)")
                }
                if entity.isInHierarchy {
                    try bindings.append(entity.name)
                    columns.append(quoteIdentifier(EntityDescription.discriminatorColumn))
                    values.append("$\(bindings.count)::text")
                }
                let sql = "INSERT INTO \(quoteIdentifier(entity.tableName)) (\(columns.joined(separator: ", "))) VALUES (\(values.joined(separator: ", ")))"
                statements.append(Statement(sql: sql, bindings: bindings, check: .none))
                continue
            }
            var bindings = PostgresBindings()
            try bindings.append(rows.map(\.key))
            var columns = [quoteIdentifier("id")]
            var casts = ["$1::bigint[]"]
            for index in entity.writableColumnIndices {
                let type = Self.columnType(entity, index)
                try ValueCoding.appendArray(rows.map { $0.values[index] }, of: type, to: &bindings)
                columns.append(quoteIdentifier(entity.columnName(of: index)))
                casts.append("$\(bindings.count)::\(type.sqlType)[]")
            }
            // A hierarchy's rows name their entity, bound once for all of them.
            var select = "*"
            if entity.isInHierarchy {
                try bindings.append(entity.name)
                columns.append(quoteIdentifier(EntityDescription.discriminatorColumn))
                select = "*, $\(bindings.count)::text"
            }
            let sql = "INSERT INTO \(quoteIdentifier(entity.tableName)) (\(columns.joined(separator: ", "))) SELECT \(select) FROM unnest(\(casts.joined(separator: ", ")))"
            statements.append(Statement(sql: sql, bindings: bindings, check: .none))
        }
    }

    private mutating func planCopy(_ entity: EntityDescription, _ rows: [Insert]) {
        let columns = entity.writableColumnIndices
        let named = entity.isInHierarchy
        let types = columns.map { Self.columnType(entity, $0) } + (named ? [.string] : [])
        let copy = Copy(table: entity.tableName, columns: ["id"] + columns.map(entity.columnName(of:)) + (named ? [EntityDescription.discriminatorColumn] : []),
                        rows: rows, properties: columns, types: types, entityName: named ? entity.name : nil)
        statements.append(Statement(sql: "COPY \(quoteIdentifier(entity.tableName))", bindings: PostgresBindings(),
                                    check: .none, copy: copy))
    }

    private mutating func planUpdates(_ updates: [Update]) throws {
        // Read in place (see ``updateGroups(_:)``).
        try updates.withUnsafeBufferPointer { try planUpdates($0, groups: Self.updateGroups(updates)) }
    }

    private mutating func planUpdates(_ updates: UnsafeBufferPointer<Update>,
                                      groups: [(entity: EntityDescription, changed: [Int], rows: [Int])]) throws {
        for (entity, changed, rows) in groups {
            var bindings = PostgresBindings()
            var assignments: [String] = []
            let sql: String
            let keys = rows.map { updates[$0].key }
            let versions = rows.map { updates[$0].version }
            if rows.count == 1 {
                // One row: scalar parameters, which the server parses and plans faster than unnest.
                let row = updates[rows[0]]
                try bindings.append(row.key)
                try bindings.append(TransactionID(row.version))
                for index in changed {
                    let type = Self.columnType(entity, index)
                    try ValueCoding.append(row.values[index], of: type, to: &bindings)
                    assignments.append("\(quoteIdentifier(entity.columnName(of: index))) = $\(bindings.count)::\(type.sqlType)")
                }
                if assignments.isEmpty { assignments.append("\"id\" = t.\"id\"") }
                sql = "UPDATE \(quoteIdentifier(entity.tableName)) AS t SET \(assignments.joined(separator: ", ")) WHERE t.\"id\" = $1 AND t.xmin = $2 RETURNING t.\"id\", t.xmin"
            } else {
                // Keys and versions, then each changed column: a header, and a length and
                // (for most types) at most 8 bytes per value.
                bindings.reserveCapacity(forAdditionalBytes: 20 * (2 + changed.count) + rows.count * (20 + 12 * changed.count))
                try bindings.append(keys)
                try bindings.append(versions.map(TransactionID.init))
                var casts = ["$1::bigint[]", "$2::xid[]"]
                var aliases = ["k", "v"]
                for (position, index) in changed.enumerated() {
                    let type = Self.columnType(entity, index)
                    try ValueCoding.appendArray(rows.lazy.map { updates[$0].values[index] }, of: type, to: &bindings)
                    casts.append("$\(bindings.count)::\(type.sqlType)[]")
                    aliases.append("c\(position)")
                    assignments.append("\(quoteIdentifier(entity.columnName(of: index))) = u.c\(position)")
                }
                // Only join-table changes: still check (and bump) the version.
                if assignments.isEmpty { assignments.append("\"id\" = u.k") }
                sql = "UPDATE \(quoteIdentifier(entity.tableName)) AS t SET \(assignments.joined(separator: ", ")) FROM unnest(\(casts.joined(separator: ", "))) AS u(\(aliases.joined(separator: ", "))) WHERE t.\"id\" = u.k AND t.xmin = u.v RETURNING t.\"id\", t.xmin"
            }
            statements.append(Statement(
                sql: sql, bindings: bindings, check: .versions(entity: entity, keys: keys, versions: versions),
                verification: isPipelined ? try Self.verification(of: entity, keys: keys) : nil))
        }
    }

    /// The updates grouped by entity, then by the columns they change, as positions in
    /// `updates`: entities in first-seen order, and within one, sets of columns in first-seen
    /// order. The rows are not copied, and a run of rows changing the same columns of one
    /// entity (the usual save) costs one comparison each.
    static func updateGroups(_ updates: [Update]) -> [(entity: EntityDescription, changed: [Int], rows: [Int])] {
        struct GroupKey: Hashable {
            let entity: ObjectIdentifier
            let changed: [Int]
        }
        var groups: [(entity: EntityDescription, changed: [Int], rows: [Int])] = []
        var positions: [GroupKey: Int] = [:]
        var last = -1
        // Read in place: a copy of each update would retain and release its arrays.
        updates.withUnsafeBufferPointer { updates in
            for position in updates.indices {
                if last < 0 || groups[last].entity !== updates[position].entity || groups[last].changed != updates[position].changed {
                    let key = GroupKey(entity: ObjectIdentifier(updates[position].entity), changed: updates[position].changed)
                    if let known = positions[key] {
                        last = known
                    } else {
                        last = groups.count
                        positions[key] = last
                        groups.append((updates[position].entity, updates[position].changed, []))
                    }
                }
                groups[last].rows.append(position)
            }
        }
        guard groups.count > 1 else { return groups }
        // Stable by entity's first appearance; groups of one entity keep their order.
        var entityOrder: [ObjectIdentifier: Int] = [:]
        for group in groups where entityOrder[ObjectIdentifier(group.entity)] == nil {
            entityOrder[ObjectIdentifier(group.entity)] = entityOrder.count
        }
        return groups.enumerated().sorted { lhs, rhs in
            let left = entityOrder[ObjectIdentifier(lhs.element.entity), default: 0]
            let right = entityOrder[ObjectIdentifier(rhs.element.entity), default: 0]
            return left != right ? left < right : lhs.offset < rhs.offset
        }.map(\.element)
    }

    private mutating func planDeletes(_ deletes: [Delete]) throws {
        // Entities whose rows reference others go first, so ON DELETE CASCADE of a parent
        // does not remove a child row before its own version-checked DELETE.
        let groups = Self.grouped(deletes, by: \.entity).sorted { lhs, rhs in
            Self.references(lhs.0, rhs.0) && !Self.references(rhs.0, lhs.0)
        }
        for (entity, rows) in groups {
            var bindings = PostgresBindings()
            try bindings.append(rows.map(\.key))
            try bindings.append(rows.map { TransactionID($0.version) })
            let sql = "DELETE FROM \(quoteIdentifier(entity.tableName)) AS t USING unnest($1::bigint[], $2::xid[]) AS u(k, v) WHERE t.\"id\" = u.k AND t.xmin = u.v RETURNING t.\"id\""
            statements.append(Statement(
                sql: isPipelined ? Self.checked(sql, returning: "w.\"id\"", expected: rows.count) : sql,
                bindings: bindings, check: .versions(entity: entity, keys: rows.map(\.key), versions: rows.map(\.version))))
        }
    }

    private mutating func planJoinChanges(_ changes: [JoinChange], insert: Bool) throws {
        var byTable: [String: (JoinTable, [JoinChange])] = [:]
        var order: [String] = []
        for change in Set(changes.map(\.normalised)) {
            if byTable[change.table.name] == nil { order.append(change.table.name) }
            byTable[change.table.name, default: (change.table, [])].1.append(change)
        }
        for name in order.sorted() {
            let (table, rows) = byTable[name]!
            var bindings = PostgresBindings()
            try bindings.append(rows.map(\.source))
            try bindings.append(rows.map(\.destination))
            let source = quoteIdentifier(table.sourceColumn)
            let destination = quoteIdentifier(table.destinationColumn)
            let sql = insert
                ? "INSERT INTO \(quoteIdentifier(name)) (\(source), \(destination)) SELECT * FROM unnest($1::bigint[], $2::bigint[]) ON CONFLICT DO NOTHING"
                : "DELETE FROM \(quoteIdentifier(name)) AS j USING unnest($1::bigint[], $2::bigint[]) AS u(s, d) WHERE j.\(source) = u.s AND j.\(destination) = u.d"
            statements.append(Statement(sql: sql, bindings: bindings, check: .none))
        }
    }

    // MARK: Version checks that fail by themselves

    /// A statement that divides by zero (SQLSTATE 22012) unless each row of `keys` now has
    /// this transaction's ID as its version, that is, unless the statement before it wrote
    /// every one of them. Sent right after an `UPDATE` of a pipelined save, so that `COMMIT`
    /// behind it is skipped when a row changed underneath.
    static func verification(of entity: EntityDescription, keys: [Int64]) throws -> (sql: String, bindings: PostgresBindings) {
        let table = quoteIdentifier(entity.tableName)
        if keys.count == 1 {
            return ("SELECT 1 / (count(*) = 1)::int FROM \(table) AS t WHERE t.\"id\" = $1 AND t.xmin = pg_current_xact_id()::xid",
                    try PostgresBindings(keys[0]))
        }
        return ("SELECT 1 / (count(*) = \(keys.count))::int FROM \(table) AS t WHERE t.\"id\" = ANY($1) AND t.xmin = pg_current_xact_id()::xid",
                try PostgresBindings(keys))
    }

    /// The text a failed version check casts to `boolean`, so that its error names it.
    static let versionCheckMarker = "postgres-data version check"

    /// `statement` (an `UPDATE` or `DELETE` … `RETURNING`) wrapped so that it fails — SQLSTATE
    /// 22P02, the marker in the message — unless it wrote exactly `expected` rows. Plain SQL
    /// has no `RAISE`; casting a text computed at run time to `boolean` is its assertion, and
    /// no function has to exist in the user's schema. The rows come back as before.
    static func checked(_ statement: String, returning columns: String, expected: Int) -> String {
        "WITH w AS (\(statement)) SELECT \(columns) FROM (SELECT count(*) AS n FROM w) AS c LEFT JOIN w ON true WHERE CASE WHEN c.n = \(expected) THEN true ELSE ('\(versionCheckMarker): ' || c.n || ' of \(expected) rows')::boolean END"
    }

    /// True when `error` is a failed check of ``checked(_:returning:expected:)``.
    static func isFailedVersionCheck(_ error: PostgresError) -> Bool {
        error.sqlState?.rawValue == "22P02" && error.message.contains(versionCheckMarker)
    }

    /// The column type of a stored property (a foreign key is a bigint).
    static func columnType(_ entity: EntityDescription, _ index: Int) -> AttributeType {
        entity.properties[index].attribute?.attributeType ?? .integer64
    }

    /// True when `entity` has a foreign key to `other`.
    static func references(_ entity: EntityDescription, _ other: EntityDescription) -> Bool {
        entity.columnIndices.contains { index in
            entity.properties[index].relationship != nil && entity.destination(of: index) === other
        }
    }
}
