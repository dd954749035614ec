import Foundation
import PostgresClient

extension PersistentStoreCoordinator {
    /// The position after every history transaction committed now: fetching history after
    /// it returns only what is written from now on.
    ///
    /// Core Data equivalent: `currentPersistentHistoryToken(fromStores:)`.
    public func currentPersistentHistoryToken() async throws -> PersistentHistoryToken {
        let snapshot = try await withConnection { connection in
            try await connection.query("SELECT pg_current_snapshot()::text")[0].decode(String.self, at: 0)
        }
        return PersistentHistoryToken(snapshot: snapshot)
    }

    /// Runs a history request on a pooled connection.
    func execute(_ request: PersistentHistoryChangeRequest) async throws -> PersistentHistoryResult {
        guard try loaded().tracksHistory else {
            throw PostgresDataError.invalidRequest("the store does not track persistent history; load it with StoreOptions(persistentHistoryTracking: true)")
        }
        let model = managedObjectModel
        let run: @Sendable (Connection) async throws -> PersistentHistoryResult = { connection in
            switch request.operation {
            case .fetchAfterToken, .fetchAfterDate:
                try await HistoryFetch(request: request, model: model, excluding: nil).run(on: connection)
            case .deleteBeforeToken(let token):
                try await Self.deleteHistory(where: "(\"xid\" < pg_snapshot_xmax($1::text::pg_snapshot) OR \"xid\"::text = ANY($2)) AND \(HistoryFetch.seen("$1", "$2", "$3"))",
                                             bindings: try PostgresBindings(token.snapshot, token.seen, token.unseen), on: connection)
            case .deleteBeforeDate(let date):
                try await Self.deleteHistory(where: "\"timestamp\" < $1", bindings: try PostgresBindings(date), on: connection)
            }
        }
        return try await withConnection(run)
    }

    private static func deleteHistory(where condition: String, bindings: PostgresBindings, on connection: Connection) async throws -> PersistentHistoryResult {
        let rows = try await connection.query(
            "WITH d AS (DELETE FROM \(HistorySchema.transactions) WHERE \(condition) RETURNING 1) SELECT count(*) FROM d", bindings: bindings)
        return PersistentHistoryResult(transactions: [], count: Int(try rows[0].decode(Int64.self, at: 0)), token: nil)
    }
}

/// One history fetch, inside a repeatable-read transaction: the snapshot, the transactions,
/// their changes.
struct HistoryFetch {
    let request: PersistentHistoryChangeRequest
    let model: ManagedObjectModel
    let excluding: UUID?

    /// SQL true when the token given by three text parameters (snapshot, seen, unseen) has
    /// seen the row's `xid`.
    static func seen(_ snapshot: String, _ seen: String, _ unseen: String) -> String {
        "((pg_visible_in_snapshot(\"xid\", \(snapshot)::text::pg_snapshot) AND NOT \"xid\"::text = ANY(\(unseen))) OR \"xid\"::text = ANY(\(seen)))"
    }

    struct Row {
        var number: Int64
        var xid: String
        var author: String?
        var contextName: String?
        var origin: UUID
        var timestamp: Date
    }

    /// The conditions and parameters of a history fetch, and the token it fetches after.
    struct Plan {
        var filter: String
        var bindings: PostgresBindings
        var previous: PersistentHistoryToken?
    }

    /// Fetches in one repeatable-read, read-only transaction: one snapshot for the position
    /// and the rows. Without a limit, on a connection outside a transaction, the whole fetch
    /// is one round trip: `BEGIN`, the position, the transactions, their changes and `COMMIT`
    /// in one pipeline (the remote-change listener runs one per notification).
    func run(on connection: Connection) async throws -> PersistentHistoryResult {
        let plan = try makePlan()
        if request.resultType != .count, request.fetchLimit == nil, await connection.transactionStatus == .idle {
            return try await fetchPipelined(plan, on: connection)
        }
        return try await connection.withTransaction(TransactionOptions(isolation: .repeatableRead, readOnly: true)) { connection in
            try await fetch(plan, on: connection)
        }
    }

    /// The snapshot (the position after what the fetch sees) and the WAL position read after
    /// it was taken, which covers the commits it sees.
    private static let positionSQL = "SELECT pg_current_snapshot()::text, (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::int8"

    private static let transactionColumns = "\"id\", \"xid\"::text, \"author\", \"context_name\", \"origin\", \"timestamp\""

    private static let changeColumns = "\"transaction_id\", \"entity\", \"change_type\", \"object_keys\"::text, \"updated_properties\", \"tombstones\"::text"

    /// The filter and parameters of this fetch, from the request alone.
    func makePlan() throws -> Plan {
        var bindings = PostgresBindings()
        var conditions: [String] = []
        var previous: PersistentHistoryToken?
        switch request.operation {
        case .fetchAfterToken(let token?):
            previous = token
            try bindings.append(token.snapshot)
            try bindings.append(token.seen)
            try bindings.append(token.unseen)
            // The index on xid bounds the search; a transaction left unseen may be older.
            conditions.append("(\"xid\" >= pg_snapshot_xmin($1::text::pg_snapshot) OR \"xid\"::text = ANY($3))")
            conditions.append("NOT \(Self.seen("$1", "$2", "$3"))")
        case .fetchAfterDate(let date):
            try bindings.append(date)
            conditions.append("\"timestamp\" > $\(bindings.count)")
        default:
            break
        }
        if let excluding {
            try bindings.append(excluding)
            conditions.append("\"origin\" <> $\(bindings.count)")
        }
        if let authors = request.authors {
            try bindings.append(Array(authors))
            conditions.append("\"author\" = ANY($\(bindings.count))")
        }
        if !request.excludedAuthors.isEmpty {
            try bindings.append(Array(request.excludedAuthors))
            conditions.append("\"author\" IS DISTINCT FROM ALL($\(bindings.count))")
        }
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return Plan(filter: filter, bindings: bindings, previous: previous)
    }

    /// The statements of a fetch in one round trip: `BEGIN`, the position, the transactions,
    /// their changes (the same filter in the same snapshot: exactly those transactions') and
    /// `COMMIT`.
    func pipelineStatements(_ plan: Plan) -> [(sql: String, bindings: PostgresBindings)] {
        var statements: [(sql: String, bindings: PostgresBindings)] = [
            (TransactionOptions(isolation: .repeatableRead, readOnly: true).beginStatement, PostgresBindings()),
            (Self.positionSQL, PostgresBindings()),
            ("SELECT \(Self.transactionColumns) FROM \(HistorySchema.transactions)\(plan.filter) ORDER BY \"id\"", plan.bindings),
        ]
        if request.resultType == .transactionsAndChanges {
            statements.append(("SELECT \(Self.changeColumns) FROM \(HistorySchema.changes) WHERE \"transaction_id\" IN (SELECT \"id\" FROM \(HistorySchema.transactions)\(plan.filter)) ORDER BY \"transaction_id\"", plan.bindings))
        }
        statements.append(("COMMIT", PostgresBindings()))
        return statements
    }

    private func fetchPipelined(_ plan: Plan, on connection: Connection) async throws -> PersistentHistoryResult {
        let withChanges = request.resultType == .transactionsAndChanges
        var results: [QueryResult] = []
        for outcome in try await connection.pipeline(pipelineStatements(plan)) {
            switch outcome {
            case .succeeded(let result):
                results.append(result)
            case .failed(let error), .unanswered(let error), .notSent(let error):
                if error.kind != .connectionLost { _ = await connection.resetForReuse() }
                throw error
            case .skipped:
                _ = await connection.resetForReuse()
                throw PostgresError(.server, message: "the history fetch's pipeline skipped a statement without a failure before it")
            }
        }
        let rows = try results[2].map(Self.transactionRow)
        let changes = withChanges ? try decodeChanges(results[3]) : [:]
        return try await result(rows: rows, changes: changes, position: results[1], plan: plan, truncated: false, on: connection)
    }

    private func fetch(_ plan: Plan, on connection: Connection) async throws -> PersistentHistoryResult {
        let position = try await connection.query(Self.positionSQL)
        if request.resultType == .count {
            let count = try await connection.query("SELECT count(*) FROM \(HistorySchema.transactions)\(plan.filter)", bindings: plan.bindings)
            return PersistentHistoryResult(transactions: [], count: Int(try count[0].decode(Int64.self, at: 0)), token: nil)
        }
        let limit = request.fetchLimit.map { " LIMIT \(max(0, $0) + 1)" } ?? ""
        var rows = try await connection.query(
            "SELECT \(Self.transactionColumns) FROM \(HistorySchema.transactions)\(plan.filter) ORDER BY \"id\"\(limit)",
            bindings: plan.bindings
        ).map(Self.transactionRow)
        var truncated = false
        if let fetchLimit = request.fetchLimit, rows.count > fetchLimit {
            rows.removeLast(rows.count - max(0, fetchLimit))
            truncated = true
        }
        let changes = request.resultType == .transactionsAndChanges ? try await self.changes(of: rows.map(\.number), on: connection) : [:]
        return try await result(rows: rows, changes: changes, position: position, plan: plan, truncated: truncated, on: connection)
    }

    private static func transactionRow(_ row: PostgresClient.Row) throws -> Row {
        Row(number: try row.decode(Int64.self, at: 0), xid: try row.decode(String.self, at: 1), author: try row.decode(String?.self, at: 2),
            contextName: try row.decode(String?.self, at: 3), origin: try row.decode(UUID.self, at: 4), timestamp: try row.decode(Date.self, at: 5))
    }

    /// The fetched transactions with their changes and tokens; `position` is the result of
    /// ``positionSQL``.
    private func result(rows: [Row], changes: [Int64: [PersistentHistoryChange]], position: QueryResult, plan: Plan,
                        truncated: Bool, on connection: Connection) async throws -> PersistentHistoryResult {
        let now = try position[0].decode(String.self, at: 0)
        let walPosition = WALPosition(offset: UInt64(bitPattern: try position[0].decode(Int64.self, at: 1)))
        let tokens = try await self.tokens(for: rows, now: now, previous: plan.previous, truncated: truncated, on: connection)
        var transactions: [PersistentHistoryTransaction] = []
        transactions.reserveCapacity(rows.count)
        for (row, token) in zip(rows, tokens.each) {
            transactions.append(PersistentHistoryTransaction(
                token: token, author: row.author, contextName: row.contextName, timestamp: row.timestamp,
                changes: changes[row.number] ?? [], transactionNumber: row.number, transactionID: UInt64(row.xid) ?? 0,
                storeInstanceID: row.origin))
        }
        return PersistentHistoryResult(transactions: transactions, count: transactions.count, token: tokens.end, walPosition: walPosition)
    }

    /// Each transaction's token, and the token after the whole result.
    ///
    /// After a token, the prefix form: the earlier token plus the transactions returned up to
    /// this one. After a date (or with no token), the current snapshot minus the transactions
    /// returned after this one (and, when a limit cut the result, those left out).
    private func tokens(for rows: [Row], now: String, previous: PersistentHistoryToken?, truncated: Bool,
                        on connection: Connection) async throws -> (each: [PersistentHistoryToken], end: PersistentHistoryToken) {
        let complete = PersistentHistoryToken(snapshot: now)
        if case .fetchAfterToken = request.operation, let previous {
            var seen = previous.seen
            var each: [PersistentHistoryToken] = []
            for row in rows {
                seen.append(row.xid)
                each.append(PersistentHistoryToken(snapshot: previous.snapshot, seen: seen, unseen: previous.unseen))
            }
            if !truncated, !each.isEmpty { each[each.count - 1] = complete }
            return (each, truncated ? (each.last ?? previous) : complete)
        }
        var leftOut: [String] = []
        if truncated {
            var bindings = PostgresBindings()
            try bindings.append(rows.last?.number ?? 0)
            var condition = "\"id\" > $1"
            if case .fetchAfterDate(let date) = request.operation {
                try bindings.append(date)
                condition += " AND \"timestamp\" > $2"
            }
            leftOut = try await connection.query("SELECT \"xid\"::text FROM \(HistorySchema.transactions) WHERE \(condition)", bindings: bindings)
                .map { try $0.decode(String.self, at: 0) }
        }
        var each: [PersistentHistoryToken] = []
        for index in rows.indices {
            each.append(PersistentHistoryToken(snapshot: now, unseen: rows[(index + 1)...].map(\.xid) + leftOut))
        }
        return (each, truncated ? (each.last ?? PersistentHistoryToken(snapshot: now, unseen: leftOut)) : complete)
    }

    /// The changes of the transactions `numbers`, one per object, by transaction number.
    private func changes(of numbers: [Int64], on connection: Connection) async throws -> [Int64: [PersistentHistoryChange]] {
        guard !numbers.isEmpty else { return [:] }
        return try decodeChanges(try await connection.query(
            "SELECT \(Self.changeColumns) FROM \(HistorySchema.changes) WHERE \"transaction_id\" = ANY($1) ORDER BY \"transaction_id\"",
            numbers))
    }

    /// Rows of ``changeColumns`` as changes, one per object, by transaction number.
    private func decodeChanges(_ rows: QueryResult) throws -> [Int64: [PersistentHistoryChange]] {
        var result: [Int64: [PersistentHistoryChange]] = [:]
        for row in rows {
            // History written by another version of the model may name entities this one lacks.
            guard let entity = model.entitiesByName[try row.decode(String.self, at: 1)],
                  let type = PersistentHistoryChange.ChangeType(rawValue: try row.decode(Int16.self, at: 2)) else { continue }
            let properties = try row.decode([String]?.self, at: 4).map(Set.init)
            let keys = HistoryRecord.keys(ofMultirange: try row.decode(String.self, at: 3))
            let tombstones = try row.decode(String?.self, at: 5).map { HistoryTombstones.decode($0, entity: entity) } ?? [:]
            var changes = result[try row.decode(Int64.self, at: 0), default: []]
            changes.reserveCapacity(changes.count + keys.count)
            for key in keys {
                changes.append(PersistentHistoryChange(changeType: type, changedObjectID: ManagedObjectID(entity: entity, primaryKey: key),
                                                       updatedProperties: properties, tombstone: tombstones[key]))
            }
            result[try row.decode(Int64.self, at: 0)] = changes
        }
        return result
    }
}
