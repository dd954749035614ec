import CLibPQ

/// What became of one statement of a pipeline.
package enum PipelineOutcome: Sendable {
    /// It ran; its rows or command tag.
    case succeeded(QueryResult)
    /// It failed; the server skipped the statements after it.
    case failed(PostgresError)
    /// An earlier statement failed, so the server did not run it.
    case skipped
    /// Its result never came: the connection was lost first (it may have run or not).
    case unanswered(PostgresError)
    /// It could not be sent (the connection broke, or libpq refused it): it never ran.
    case notSent(PostgresError)
}

extension Connection {
    /// Runs `statements` in one round trip with libpq's pipeline mode: all are sent in one
    /// flush followed by one Sync, then their results are read in order.
    ///
    /// As in any extended-protocol exchange, once a statement fails the server skips the rest
    /// up to the Sync (``PipelineOutcome/skipped``). An explicit `BEGIN` … `COMMIT` among the
    /// statements makes them one transaction that a failure leaves open and failed (roll it
    /// back). Statements may not be `COPY`. Keep pipelines small: the client sends everything
    /// before it reads anything, so results larger than the socket's buffers could stall both
    /// sides.
    package func pipeline(_ statements: [(sql: String, bindings: PostgresBindings)],
                          timeout: Duration? = nil) async throws -> [PipelineOutcome] {
        try await withCancellation(timeout: timeout) { token in
            try runPipeline(statements, token: token)
        }
    }

    private func runPipeline(_ statements: [(sql: String, bindings: PostgresBindings)], token: CancelToken?) throws -> [PipelineOutcome] {
        let handle = try readyHandle()
        let started = try begin(token, statement: statements.map(\.sql).joined(separator: "; "),
                                parameters: statements.reduce(0) { $0 + $1.bindings.count })
        defer { end(token, statement: statements.map(\.sql).joined(separator: "; "), since: started) }
        guard PQenterPipelineMode(handle) == 1 else { throw sendError(handle, statement: statements.first?.sql ?? "") }
        var outcomes: [PipelineOutcome] = []
        outcomes.reserveCapacity(statements.count)
        var sent = 0
        var sendFailure: PostgresError?
        for statement in statements {
            noteSending(statement.sql, statement.bindings)
            let accepted = statement.bindings.withUnsafeParameters { count, types, values, lengths, formats in
                PQsendQueryParams(handle, statement.sql, count, types, values, lengths, formats, PostgresFormat.binary.rawValue)
            }
            guard accepted == 1 else {
                sendFailure = sendError(handle, statement: statement.sql)
                break
            }
            sent += 1
        }
        // What was queued is synced and read even after a failed send, so that the connection
        // leaves pipeline mode in order; the statements not sent never reached the server.
        if PQstatus(handle) == CONNECTION_OK && PQpipelineSync(handle) == 1 {
            readResults(handle, statements: statements[..<sent], token: token, into: &outcomes)
        }
        let lost = PostgresError(.connectionLost, message: "the connection to the server was lost during a pipeline")
        while outcomes.count < sent { outcomes.append(.unanswered(lost)) }
        for _ in sent..<statements.count { outcomes.append(.notSent(sendFailure ?? lost)) }
        if PQstatus(handle) != CONNECTION_OK || PQexitPipelineMode(handle) != 1 { markBroken() }
        return outcomes
    }

    /// Reads each statement's result, then the Sync's; stops early when the connection breaks.
    private func readResults(_ handle: OpaquePointer, statements: ArraySlice<(sql: String, bindings: PostgresBindings)>,
                             token: CancelToken?, into outcomes: inout [PipelineOutcome]) {
        for statement in statements {
            var outcome: PipelineOutcome?
            while let result = PQgetResult(handle) {
                switch PQresultStatus(result) {
                case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
                    if outcome == nil {
                        outcome = .succeeded(QueryResult(storage: ResultStorage(handle: result, statement: statement.sql)))
                    } else {
                        PQclear(result)
                    }
                case PGRES_FATAL_ERROR:
                    outcome = .failed(makeError(result, statement: statement.sql, token: token))
                    PQclear(result)
                case PGRES_PIPELINE_ABORTED:
                    outcome = .skipped
                    PQclear(result)
                default:
                    PQclear(result)
                }
            }
            guard let outcome else { return }
            outcomes.append(outcome)
        }
        // The Sync's own result; a lost connection yields none.
        for _ in 0..<2 {
            guard let result = PQgetResult(handle) else {
                if PQstatus(handle) != CONNECTION_OK { return }
                continue
            }
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { return }
        }
        markBroken()
    }
}
