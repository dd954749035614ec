import Foundation
import PostgresClient

/// The statements of a batch insert.
struct BatchInsertPlan: Sendable {
    enum Step: Sendable {
        /// Rows copied into `table`: the entity's (counted in the result) or a staging table.
        case copy(table: String, columns: [String], rows: [UInt8], count: Int, isStaging: Bool = false)
        /// The rows of a handler copied into `table` as the handler makes them: the entity's
        /// (counted in the result) or a staging table.
        case stream(table: String, columns: [String], rows: any BatchInsertRowSource, isStaging: Bool = false)
        case execute(sql: String)
        /// With `returnsIDs` the statement returns each row's ID; with `updatedProperties` (an
        /// upsert that updates), also whether the row was inserted (`xmax = 0`: a row an
        /// `ON CONFLICT DO UPDATE` rewrote carries the updating transaction in `xmax`).
        case insert(sql: String, bindings: PostgresBindings, returnsIDs: Bool, updatedProperties: [String]? = nil)
    }

    var steps: [Step] = []

    /// The properties an upsert's update sets (nil when it updates none).
    var updatedProperties: [String]? {
        for case .insert(_, _, _, let updated?) in steps { return updated }
        return nil
    }

    private init(steps: [Step]) {
        self.steps = steps
    }

    /// Rows a handler makes at execution: one COPY into the table, or, when IDs come back or
    /// conflicts are handled, one COPY into a temporary table and one `INSERT … SELECT` from
    /// it (every key is supplied, so an upsert updates every column).
    init(entity: EntityDescription, streaming rows: any BatchInsertRowSource, request: BatchInsertRequest, returningIDs: Bool) throws {
        let columns = entity.writableColumnIndices.map(entity.columnName(of:))
        let wantIDs = returningIDs || request.wantsIDs
        if !wantIDs, request.onConflict == .error, !entity.isInHierarchy {
            steps = [.stream(table: entity.tableName, columns: columns, rows: rows)]
            return
        }
        let staging = "postgres_data_batch_insert"
        let definitions = entity.writableColumnIndices.map { "\(quoteIdentifier(entity.columnName(of: $0))) \(SavePlan.columnType(entity, $0).sqlType)" }
        steps = [
            .execute(sql: "CREATE TEMPORARY TABLE \(quoteIdentifier(staging)) (\(definitions.joined(separator: ", "))) ON COMMIT DROP"),
            .stream(table: staging, columns: columns, rows: rows, isStaging: true),
        ]
        let select = "SELECT * FROM \(quoteIdentifier(staging))"
        steps.append(try Self.insert(entity, from: select, bindings: PostgresBindings(), suppliedKeys: entity.writableColumnIndices, request: request,
                                     returningIDs: wantIDs))
    }

    init(entity: EntityDescription, rows: [[Int: AttributeValue]], request: BatchInsertRequest, returningIDs: Bool) throws {
        let wantIDs = returningIDs || request.wantsIDs
        if !wantIDs, request.onConflict == .error, !entity.isInHierarchy {
            // Keys a row leaves out get the model's defaults.
            let full = rows.map { row in entity.properties.indices.map { row[$0] ?? entity.defaultValues[$0] } }
            steps = [try Self.copy(entity, full)]
            return
        }
        // Rows grouped by the keys they supply: an upsert updates only those.
        var groups: [[Int]: [[Int: AttributeValue]]] = [:]
        var order: [[Int]] = []
        for row in rows {
            let keys = entity.writableColumnIndices.filter { row[$0] != nil }
            if groups[keys] == nil { order.append(keys) }
            groups[keys, default: []].append(row)
        }
        for keys in order {
            let group = groups[keys]!
            // Every column is inserted (keys left out take the model's defaults).
            var bindings = PostgresBindings()
            var casts: [String] = []
            for index in entity.writableColumnIndices {
                let type = SavePlan.columnType(entity, index)
                try ValueCoding.appendArray(group.map { $0[index] ?? entity.defaultValues[index] }, of: type, to: &bindings)
                casts.append("$\(bindings.count)::\(type.sqlType)[]")
            }
            let select = "SELECT * FROM unnest(\(casts.joined(separator: ", ")))"
            steps.append(try Self.insert(entity, from: select, bindings: bindings, suppliedKeys: keys, request: request, returningIDs: wantIDs))
        }
    }

    /// `INSERT INTO table (every column) <select>` with the request's conflict handling,
    /// returning the new IDs or their count.
    private static func insert(
        _ entity: EntityDescription, from select: String, bindings: PostgresBindings, suppliedKeys keys: [Int], request: BatchInsertRequest,
        returningIDs: Bool
    ) throws -> Step {
        var columns = entity.writableColumnIndices.map { quoteIdentifier(entity.columnName(of: $0)) }
        var select = select
        if entity.isInHierarchy, select.hasPrefix("SELECT * ") {
            // A hierarchy's rows name their entity (a name from the model, written out).
            columns.append(quoteIdentifier(EntityDescription.discriminatorColumn))
            select = "SELECT *, \(quoteLiteral(entity.name))::text " + select.dropFirst("SELECT * ".count)
        }
        var sql = "INSERT INTO \(quoteIdentifier(entity.tableName)) (\(columns.joined(separator: ", "))) \(select)"
        switch request.onConflict {
        case .error: break
        case .ignore: sql += " ON CONFLICT DO NOTHING"
        case .update(let conflictKeys):
            let target = try conflictTarget(entity, conflictKeys)
            let targetIndices = Set(target.map { entity.propertyIndex(named: $0)! })
            let updates = keys.filter { !targetIndices.contains($0) }.map { index -> String in
                let column = quoteIdentifier(entity.columnName(of: index))
                return "\(column) = EXCLUDED.\(column)"
            }
            let targetColumns = target.map { quoteIdentifier(entity.columnName(of: entity.propertyIndex(named: $0)!)) }
            sql += updates.isEmpty ? " ON CONFLICT DO NOTHING"
                : " ON CONFLICT (\(targetColumns.joined(separator: ", "))) DO UPDATE SET \(updates.joined(separator: ", "))"
            if returningIDs && !updates.isEmpty {
                let names = keys.filter { !targetIndices.contains($0) }.map { entity.properties[$0].name }
                return .insert(sql: sql + " RETURNING \"id\", xmax = 0", bindings: bindings, returnsIDs: true, updatedProperties: names)
            }
        }
        if returningIDs {
            return .insert(sql: sql + " RETURNING \"id\"", bindings: bindings, returnsIDs: true)
        }
        return .insert(sql: "WITH i AS (\(sql) RETURNING 1) SELECT count(*) FROM i", bindings: bindings, returnsIDs: false)
    }

    /// The keys of the uniqueness constraint an upsert resolves conflicts on.
    private static func conflictTarget(_ entity: EntityDescription, _ keys: [String]?) throws -> [String] {
        let constraints = entity.uniquenessConstraints + entity.attributes.filter(\.isUnique).map { [$0.name] }
        if let keys {
            guard constraints.contains(where: { Set($0) == Set(keys) }) else {
                throw PostgresDataError.invalidRequest("batch insert of \(entity.name): no uniqueness constraint on \(keys.joined(separator: ", ")); its constraints are \(constraints.map { "(\($0.joined(separator: ", ")))" }.joined(separator: ", "))")
            }
            return keys
        }
        guard let first = constraints.first else {
            throw PostgresDataError.invalidRequest("batch insert of \(entity.name): an upsert needs a uniqueness constraint, and \(entity.name) has none")
        }
        return first
    }

    /// One binary COPY of every column of rows holding one value per property.
    private static func copy(_ entity: EntityDescription, _ rows: [[AttributeValue]]) throws -> Step {
        let columns = entity.writableColumnIndices
        let types = columns.map { SavePlan.columnType(entity, $0) }
        var buffer = PostgresBuffer(capacity: rows.count * (2 + columns.count * 16))
        var values = [AttributeValue](repeating: .null, count: columns.count)
        for row in rows {
            for (position, index) in columns.enumerated() { values[position] = row[index] }
            buffer.writeInteger(Int16(columns.count))
            try ValueCoding.writeCopyFields(values, types: types, into: &buffer)
        }
        return .copy(table: entity.tableName, columns: columns.map(entity.columnName(of:)), rows: buffer.bytes, count: rows.count)
    }
}
