import Foundation
import PostgresClient

extension PersistentStoreCoordinator {
    /// Runs `sql` through a server-side cursor (`DECLARE … NO SCROLL CURSOR`, then
    /// `FETCH FORWARD batchSize`) in a read-only, repeatable-read transaction on a pooled
    /// connection of its own. Each batch is decoded off the context and handed to `deliver`;
    /// the server reads the next batch meanwhile (its `FETCH` is sent as soon as a batch
    /// arrives), and, with `overlapping`, the one after is received while the previous batch
    /// is still being decoded and delivered (at most three batches in memory, two without).
    ///
    /// Cancelling the calling task sends `PQcancel` for the statement in flight; the
    /// transaction is rolled back and the connection returns to the pool healthy.
    func cursorFetch<Batch: Sendable>(
        sql: String, bindings: PostgresBindings, batchSize: Int, estimate: ResultCountEstimate, overlapping: Bool,
        decode: @escaping @Sendable (QueryResult) throws -> Batch,
        estimated: @escaping @Sendable (Int) async -> Void,
        deliver: @escaping @Sendable (Batch) async throws -> Void,
        access: StoreAccess?
    ) async throws {
        try await withCursorConnection(access) { connection in
            try await connection.withTransaction(TransactionOptions(isolation: .repeatableRead, readOnly: true)) { connection in
                switch estimate {
                case .none: break
                case .exact:
                    let rows = try await connection.query("SELECT count(*) FROM (\(sql)) AS q", bindings: bindings)
                    await estimated(Int(try rows[0].decode(Int64.self, at: 0)))
                case .plannerEstimate:
                    let rows = try await connection.query("EXPLAIN (FORMAT JSON) \(sql)", bindings: bindings,
                                                          options: QueryOptions(resultFormat: .text))
                    if let count = Self.plannedRows(try rows[0].decode(String.self, at: 0)) { await estimated(count) }
                }
                var delivering: Task<Void, any Error>?
                do {
                    for try await result in connection.stream(sql, bindings: bindings, mode: .cursor(batchSize: batchSize), readingAhead: true) {
                        try Task.checkCancellation()
                        try await delivering?.value
                        if overlapping {
                            // Decoded with the delivery, while the server runs the next FETCH.
                            delivering = Task { try await deliver(try decode(result)) }
                        } else {
                            try await deliver(try decode(result))
                        }
                    }
                    try await delivering?.value
                } catch {
                    // A delivery still running must end before the transaction does.
                    delivering?.cancel()
                    _ = try? await delivering?.value
                    throw error
                }
                try Task.checkCancellation()
            }
        }
    }

    /// Runs a cursor's work with a connection of its own for as long as it walks: a pinned
    /// context's imports its generation's snapshot (the generation's connection serves the
    /// context's other reads meanwhile, which the delivery of batches may wait on).
    private func withCursorConnection<T: Sendable>(_ access: StoreAccess?, _ body: (Connection) async throws -> T) async throws -> T {
        guard let generation = access?.generation else { return try await withReadConnection(access, body) }
        let loaded = try loaded()
        requests.withLock { $0 += 1 }
        do {
            return try await generation.withImportedSnapshot(body)
        } catch {
            throw Self.wrap(error, constraints: loaded.constraints)
        }
    }

    /// The top plan node's row estimate from `EXPLAIN (FORMAT JSON)`.
    static func plannedRows(_ json: String) -> Int? {
        guard let plans = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]],
              let plan = plans.first?["Plan"] as? [String: Any],
              let rows = plan["Plan Rows"] as? NSNumber else { return nil }
        return rows.intValue
    }
}
