import PostgresClient

/// What a save's transaction did.
enum SaveOutcome: Sendable {
    /// Committed; every row written now has this version (but the rows new objects resolved
    /// to untouched, under a store-trump policy: each carries its own).
    case saved(version: UInt32?, upserted: [UpsertedRow], refreshed: [(ManagedObjectID, RowSnapshot)])
    /// Rolled back: these rows changed or vanished since the context read them (the
    /// snapshot is the row now, nil when it was deleted).
    case conflicts([(ManagedObjectID, RowSnapshot?)])
}

/// An existing row a new object resolved to on its unique key, as the save left it.
struct UpsertedRow: Sendable {
    var entity: EntityDescription
    /// The key allocated to the object, which no row took.
    var allocatedKey: Int64
    var key: Int64
    var snapshot: RowSnapshot

    /// The rows of an upsert statement (``SavePlan/Check/upserts(entity:)``).
    static func rows(of result: QueryResult, entity: EntityDescription) throws -> [UpsertedRow] {
        let proposed = entity.columnIndices.count + 2
        return try result.map { row in
            let (key, snapshot) = try PersistentStoreCoordinator.decodeSnapshot(row, entity: entity)
            return UpsertedRow(entity: entity, allocatedKey: try row.decode(Int64.self, at: proposed), key: key, snapshot: snapshot)
        }
    }
}

/// A fetch's result: its first batch, decoded, and the rows after it, still encoded.
struct SnapshotQuery: Sendable {
    var first: SnapshotBatch
    /// The number of rows of the whole result.
    var total: Int
    var rest: SnapshotRemainder?
}

/// The rows of a result after its first batch, still encoded; whoever holds it keeps the
/// whole result alive, so that only the task decoding it should.
struct SnapshotRemainder: Sendable {
    let result: QueryResult
    let decoder: SnapshotDecoder
    let start: Int

    /// Decodes the rows into `channel`, batch by batch, letting other work of the executor
    /// run every 8 batches (a yield per batch measured slower on W2); ends the channel.
    ///
    /// With `entity`, a batch decoded while `lead` batches or more wait for the consumer
    /// carries faults for its rows (``ObjectsMadeAhead``): the task, ahead, takes that work
    /// from the context, and leaves it again as soon as the context catches up.
    func decode(batchSize: Int, into channel: BatchChannel<SnapshotBatch>, makingObjectsOf entity: EntityDescription? = nil,
                lead: Int = 2) async {
        var position = start
        do {
            while position < result.count, !channel.isStopped {
                let end = min(result.count, position + batchSize)
                var batch = try decoder.batch(of: result, rows: position..<end)
                if let entity, channel.waitingCount >= lead, let keys = batch.chunked?.keys {
                    batch.madeAhead = ObjectsMadeAhead(entity: entity, keys: keys)
                }
                channel.send(batch)
                position = end
                if (position / batchSize) % 8 == 0 { await Task.yield() }
            }
            channel.finish(nil)
        } catch {
            channel.finish(error)
        }
    }
}

/// A save's rows changed underneath; thrown inside the transaction to roll it back.
private struct ConflictsFound: Error {
    var conflicts: [(ManagedObjectID, RowSnapshot?)]
}

extension PersistentStoreCoordinator {
    /// `t."id", t.xmin, t."name", …`: the columns of a snapshot of `entity`.
    static func selectList(_ entity: EntityDescription, alias: String = "t") -> String {
        (["\(alias).\"id\"", "\(alias).xmin"] + entity.columnIndices.map { "\(alias).\(quoteIdentifier(entity.columnName(of: $0)))" })
            .joined(separator: ", ")
    }

    /// ``selectList(_:alias:)`` with the `missing` properties read as NULL of their column's
    /// type (`CASE WHEN false THEN … END`), so that the row decodes as a whole one does.
    static func selectList(_ entity: EntityDescription, alias: String = "t", missing: PropertySet?) -> String {
        guard let missing else { return selectList(entity, alias: alias) }
        return (["\(alias).\"id\"", "\(alias).xmin"] + entity.columnIndices.map { index in
            let column = "\(alias).\(quoteIdentifier(entity.columnName(of: index)))"
            return missing.contains(index) ? "CASE WHEN false THEN \(column) END" : column
        }).joined(separator: ", ")
    }

    /// Decodes a row selected with ``selectList(_:alias:)``.
    static func decodeSnapshot(_ row: Row, entity: EntityDescription) throws -> (Int64, RowSnapshot) {
        let key = try row.decode(Int64.self, at: 0)
        let version = try row.decode(TransactionID.self, at: 1).rawValue
        let indices = entity.columnIndices
        let decodings = entity.columnDecodings
        let values = try [AttributeValue](uninitializedCount: entity.properties.count) { buffer, count in
            // Properties without a column (to-many relationships) hold NULL.
            buffer.initialize(repeating: .null)
            count = buffer.count
            for position in 0..<indices.count {
                let column = position + 2
                switch decodings[position] {
                case .attribute(let type):
                    buffer[indices[position]] = try ValueCoding.decode(row, at: column, as: type)
                case .foreignKey(let destination):
                    if !row.isNull(at: column) {
                        buffer[indices[position]] = .object(ManagedObjectID(entity: destination, primaryKey: try row.decode(Int64.self, at: column)))
                    }
                }
            }
        }
        return (key, RowSnapshot(values: values, version: version))
    }

    /// The current rows of `keys` (missing keys have no row).
    func fetchSnapshots(_ entity: EntityDescription, keys: [Int64], access: StoreAccess?) async throws -> [(Int64, RowSnapshot)] {
        try await withReadConnection(access) { connection in
            try await Self.fetchSnapshots(entity, keys: keys, on: connection)
        }
    }

    static func fetchSnapshots(_ entity: EntityDescription, keys: [Int64], on connection: Connection) async throws -> [(Int64, RowSnapshot)] {
        let result = try await connection.query(RelationshipFetchPlan.rows(of: entity), keys)
        return try SnapshotDecoder.snapshots(of: result, entity: entity)
    }

    /// The rows holding values of a unique key (``UniqueRowLookup``), each with the position
    /// of the candidate value it holds; read from the primary, where the save failed.
    func rowsHolding(_ lookup: UniqueRowLookup, entity: EntityDescription) async throws -> [(candidate: Int, key: Int64, snapshot: RowSnapshot)] {
        try await withConnection { connection in
            let result = try await connection.query(lookup.sql, bindings: lookup.bindings)
            let position = entity.columnIndices.count + 2
            return try result.map { row in
                let (key, snapshot) = try Self.decodeSnapshot(row, entity: entity)
                return (Int(try row.decode(Int32.self, at: position)), key, snapshot)
            }
        }
    }

    /// Rows of a fetch request, in its order.
    func fetchSnapshots(sql: String, bindings: PostgresBindings, entity: EntityDescription, access: StoreAccess?) async throws -> [(Int64, RowSnapshot)] {
        try await withReadConnection(access) { connection in
            try SnapshotDecoder.snapshots(of: try await connection.query(sql, bindings: bindings), entity: entity)
        }
    }

    /// Runs a fetch request's statement and decodes its first `batchSize` rows on the
    /// connection's thread; the rest, if any, is decoded later off the connection (see
    /// ``SnapshotRemainder/decode(batchSize:into:)``), while the context registers the
    /// batch before. A fetch of a few rows costs one trip to the connection and back.
    ///
    /// The statement's whole result is read first (one statement, no transaction): libpq 15's
    /// single-row mode, which would let decoding start with the first row, builds a result
    /// object per row. Measured on 2026-11-25 (at 104f869, W2, two cores) with the
    /// connection reading batch k + 1 while batch k was decoded and k − 1 registered: the
    /// connection's thread spent ~270 ms of CPU in `PQgetResult` for a million rows, against
    /// ~140 ms for one result, and the fetch took 1,030–1,070 ms against ~850 ms. Results
    /// too large to hold belong in an asynchronous fetch or a batch walk (a cursor).
    ///
    /// With `cachesRows` (a fetch of faults), the row cache is first sized for the result:
    /// growing it batch by batch would move a million entries about twice each. The query
    /// carries the result's size, for the context to size its identity map the same way.
    func querySnapshots(sql: String, bindings: PostgresBindings, entity: EntityDescription, batchSize: Int,
                        cachesRows: Bool, access: StoreAccess?) async throws -> SnapshotQuery {
        try await withReadConnection(access) { connection in
            let result = try await connection.query(sql, bindings: bindings)
            if cachesRows && result.count > batchSize { reserveCachedRows(result.count, for: entity) }
            let decoder = SnapshotDecoder(entity: entity, result: result)
            let end = min(result.count, batchSize)
            return SnapshotQuery(first: try decoder.batch(of: result, rows: 0..<end), total: result.count,
                                 rest: end < result.count ? SnapshotRemainder(result: result, decoder: decoder, start: end) : nil)
        }
    }

    /// Rows of a prefetch through a join table: each snapshot of `entity` with, in the
    /// column after it, the key of the object it is related to.
    func fetchOwnedSnapshots(sql: String, bindings: PostgresBindings, entity: EntityDescription,
                             access: StoreAccess?) async throws -> [(owner: Int64, key: Int64, snapshot: RowSnapshot, position: Double?)] {
        try await withReadConnection(access) { connection in
            let result = try await connection.query(sql, bindings: bindings)
            let ownerColumn = entity.columnIndices.count + 2
            let positioned = result.columns.count > ownerColumn + 1
            var rows: [(owner: Int64, key: Int64, snapshot: RowSnapshot, position: Double?)] = []
            rows.reserveCapacity(result.count)
            for row in result {
                let (key, snapshot) = try Self.decodeSnapshot(row, entity: entity)
                rows.append((try row.decode(Int64.self, at: ownerColumn), key, snapshot,
                             positioned ? try row.decode(Double.self, at: ownerColumn + 1) : nil))
            }
            return rows
        }
    }

    /// The rows of a dictionary fetch, sharing one key set.
    func fetchDictionaryRows(sql: String, bindings: PostgresBindings,
                             columns: [DictionaryDecoder.Column], access: StoreAccess?) async throws -> FetchedDictionary.Rows {
        try await withReadConnection(access) { connection in
            let result = try await connection.query(sql, bindings: bindings)
            return try DictionaryDecoder(columns: columns, result: result).rows(of: result)
        }
    }

    /// The rows of a dictionary fetch, as Swift dictionaries.
    func fetchDictionaries(sql: String, bindings: PostgresBindings,
                           columns: [DictionaryDecoder.Column], access: StoreAccess?) async throws -> [[String: AttributeValue]] {
        try await withReadConnection(access) { connection in
            let result = try await connection.query(sql, bindings: bindings)
            let decoder = DictionaryDecoder(columns: columns, result: result)
            var dictionaries: [[String: AttributeValue]] = []
            dictionaries.reserveCapacity(result.count)
            for row in result { dictionaries.append(try decoder.decode(row)) }
            return dictionaries
        }
    }

    /// The first column of every row, as keys (IDs, counts).
    func fetchIntegers(sql: String, bindings: PostgresBindings, access: StoreAccess?) async throws -> [Int64] {
        try await withReadConnection(access) { connection in
            try await connection.query(sql, bindings: bindings).map { try $0.decode(Int64.self, at: 0) }
        }
    }

    /// The keys of the objects a relationship stored elsewhere relates `owner` to.
    func fetchRelatedKeys(_ entity: EntityDescription, relationship index: Int, owner: Int64,
                          access: StoreAccess?) async throws -> [(key: Int64, position: Double?)] {
        guard let sql = RelationshipFetchPlan.relatedKeys(of: entity, relationship: index) else { return [] }
        let bindings = try PostgresBindings(owner)
        return try await withReadConnection(access) { connection in
            let result = try await connection.query(sql, bindings: bindings)
            let positioned = result.columns.count > 1
            return try result.map { row in
                (try row.decode(Int64.self, at: 0), positioned ? try row.decode(Double.self, at: 1) : nil)
            }
        }
    }

    /// Allocates primary keys from the entities' identity sequences, in one round trip for
    /// all of them: `SELECT n, array_agg(nextval(seq)) FROM generate_series(1, count) … UNION ALL …`.
    func allocateKeys(_ counts: [(EntityDescription, Int)]) async throws -> [EntityDescription: [Int64]] {
        guard counts.contains(where: { $0.1 > 0 }) else { return [:] }
        return try await withConnection { connection in try await allocateKeys(counts, on: connection) }
    }

    /// ``allocateKeys(_:)`` on a connection already held.
    private func allocateKeys(_ counts: [(EntityDescription, Int)], on connection: Connection) async throws -> [EntityDescription: [Int64]] {
        guard let allocation = try KeyAllocation(counts, sequences: try loaded().sequences) else { return [:] }
        let rows = try await connection.query(allocation.sql, bindings: allocation.bindings).map { try $0.decode((Int32, [Int64]).self) }
        return allocation.keys(from: rows)
    }

    /// Allocates keys as ``allocateKeys(_:)`` does, in the background, and hands them to
    /// `deliver` (nil when the allocation failed); the task ends once they are handed over.
    /// An idle connection runs it on its own thread at once (``ConnectionPool``'s
    /// `startOnIdleConnection`), so that a context inserting in a loop, which keeps a core
    /// busy, wakes one thread per reservation; otherwise it waits for a connection on the
    /// library's executor.
    func reserveKeys(_ counts: [(EntityDescription, Int)],
                     deliver: @escaping @Sendable ([EntityDescription: [Int64]]?) -> Void) -> Task<Void, Never> {
        if let pool = try? loaded().pool, let task = pool.startOnIdleConnection({ connection in
            self.requests.withLock { $0 += 1 }
            deliver(try? await self.allocateKeys(counts, on: connection))
        }) {
            return task
        }
        return Task(executorPreference: LibraryExecutor.shared) {
            deliver(try? await self.allocateKeys(counts))
        }
    }

    /// Runs a save plan in one transaction. Version-checked statements that miss rows roll
    /// the transaction back and report the rows as they are now.
    func execute(_ plan: SavePlan, access: StoreAccess?) async throws -> SaveOutcome {
        let isolation = try loaded().saveIsolation
        do {
            return try await withWriteConnection(access) { connection in
                plan.isPipelined ? try await Self.runPipelined(plan, isolation: isolation, on: connection)
                                 : try await Self.runStatements(plan, isolation: isolation, on: connection)
            }
        } catch let found as ConflictsFound {
            return .conflicts(found.conflicts)
        } catch PostgresDataError.database(let error) where SavePlan.isFailedUniquenessCheck(error) {
            // A conflicting row committed while the upsert ran: nothing was written; again.
            return .conflicts([])
        }
    }

    /// A small plan in one round trip: `BEGIN`, the statements and `COMMIT` in one pipeline.
    /// A statement that fails (a version check included) makes the server skip the rest,
    /// `COMMIT` with them; the transaction is then rolled back.
    private static func runPipelined(_ plan: SavePlan, isolation: TransactionOptions.IsolationLevel?,
                                     on connection: Connection) async throws -> SaveOutcome {
        // Each pipeline position's plan statement (nil for BEGIN, txid, COMMIT), and whether
        // it is that statement's verification.
        var statements: [(sql: String, bindings: PostgresBindings)] = [(TransactionOptions(isolation: isolation).beginStatement, PostgresBindings())]
        var sources: [(statement: Int, verifies: Bool)?] = [nil]
        if plan.insertsRows {
            statements.append(("SELECT txid_current()", PostgresBindings()))
            sources.append(nil)
        }
        for (position, statement) in plan.statements.enumerated() {
            statements.append((statement.sql, statement.bindings))
            sources.append((position, false))
            if let verification = statement.verification {
                statements.append(verification)
                sources.append((position, true))
            }
        }
        statements.append(("COMMIT", PostgresBindings()))
        sources.append(nil)
        let outcomes = try await connection.pipeline(statements)
        var version: UInt32?
        var upserted: [UpsertedRow] = []
        var refreshed: [(ManagedObjectID, RowSnapshot)] = []
        for (index, outcome) in outcomes.enumerated() {
            switch outcome {
            case .succeeded(let result):
                if let source = sources[index], case .upserts(let entity) = plan.statements[source.statement].check {
                    upserted += try UpsertedRow.rows(of: result, entity: entity)
                } else if let source = sources[index], case .refresh(let entity) = plan.statements[source.statement].check {
                    refreshed += try Self.identifiedSnapshots(of: result, entity: entity)
                } else if plan.insertsRows && index == 1, let row = result.first {
                    version = UInt32(truncatingIfNeeded: try row.decode(Int64.self, at: 0))
                } else if version == nil, let source = sources[index], !source.verifies, result.columns.count > 1, let row = result.first {
                    // An UPDATE's RETURNING xmin: the version of every row this save writes.
                    version = try row.decode(TransactionID.self, at: 1).rawValue
                }
            case .failed(let error) where error.kind != .connectionLost:
                // COMMIT never ran (or failed and ended the transaction): nothing was written.
                _ = await connection.resetForReuse()
                if let source = sources[index], case .versions(let entity, let keys, let versions) = plan.statements[source.statement].check,
                   source.verifies ? error.sqlState?.rawValue == "22012" : SavePlan.isFailedVersionCheck(error) {
                    let current = try await fetchSnapshots(entity, keys: keys, on: connection)
                    let rows = Dictionary(current, uniquingKeysWith: { first, _ in first })
                    let conflicts = zip(keys, versions).filter { key, version in rows[key]?.version != version }
                    throw ConflictsFound(conflicts: conflicts.map { key, _ in (ManagedObjectID(entity: entity, primaryKey: key), rows[key]) })
                }
                throw error
            case .failed(let error), .unanswered(let error):
                // The connection broke after COMMIT left: the server may have committed.
                if case .notSent = outcomes[outcomes.count - 1] { throw error }
                throw error.commitOutcomeUnknown()
            case .notSent(let error):
                _ = await connection.resetForReuse()
                throw error
            case .skipped:
                throw PostgresError(.server, message: "the save's pipeline skipped a statement without a failure before it")
            }
        }
        return .saved(version: version, upserted: upserted, refreshed: refreshed)
    }

    /// Rows of `entity` selected with ``selectList(_:alias:)``, each with its object's ID.
    private static func identifiedSnapshots(of result: QueryResult, entity: EntityDescription) throws -> [(ManagedObjectID, RowSnapshot)] {
        try SnapshotDecoder.snapshots(of: result, entity: entity).map { (ManagedObjectID(entity: entity, primaryKey: $0.0), $0.1) }
    }

    /// A large plan statement by statement in a transaction (binary COPY for many new rows).
    private static func runStatements(_ plan: SavePlan, isolation: TransactionOptions.IsolationLevel?,
                                      on connection: Connection) async throws -> SaveOutcome {
        try await connection.withTransaction(TransactionOptions(isolation: isolation)) { connection in
            var version: UInt32?
            var upserted: [UpsertedRow] = []
            var refreshed: [(ManagedObjectID, RowSnapshot)] = []
            if plan.insertsRows {
                let txid = try await connection.query("SELECT txid_current()")
                version = UInt32(truncatingIfNeeded: try txid[0].decode(Int64.self, at: 0))
            }
            for statement in plan.statements {
                if let copy = statement.copy {
                    try await connection.copyRows(into: copy.table, columns: copy.columns) { writer in try copy.write(to: &writer) }
                    continue
                }
                let result = try await connection.query(statement.sql, bindings: statement.bindings)
                if case .upserts(let entity) = statement.check {
                    upserted += try UpsertedRow.rows(of: result, entity: entity)
                    continue
                }
                if case .refresh(let entity) = statement.check {
                    refreshed += try identifiedSnapshots(of: result, entity: entity)
                    continue
                }
                if version == nil, result.columns.count > 1, let first = result.first {
                    // An UPDATE's RETURNING xmin: the version of every row this save writes.
                    version = try first.decode(TransactionID.self, at: 1).rawValue
                }
                guard case .versions(let entity, let keys, _) = statement.check, result.count != keys.count else { continue }
                let returned = Set(try result.map { try $0.decode(Int64.self, at: 0) })
                let missing = keys.filter { !returned.contains($0) }
                let current = Dictionary(try await fetchSnapshots(entity, keys: missing, on: connection),
                                         uniquingKeysWith: { first, _ in first })
                throw ConflictsFound(conflicts: missing.map { (ManagedObjectID(entity: entity, primaryKey: $0), current[$0]) })
            }
            return .saved(version: version, upserted: upserted, refreshed: refreshed)
        }
    }
}
