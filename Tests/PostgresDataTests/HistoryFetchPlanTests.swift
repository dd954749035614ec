import Foundation
import PostgresClient
@testable import PostgresData
import Testing

/// The history fetch without a server: the one round trip the remote-change listener sends
/// per notification, by text and bound values.
@Suite struct HistoryFetchPlanTests {
    let origin = UUID(uuidString: "6BA7B810-9DAD-11D1-80B4-00C04FD430C8")!

    @Test func aFetchAfterATokenIsOneTransactionInOnePipelineWhoseTwoQueriesShareTheFilter() throws {
        let token = try #require(PersistentHistoryToken("752:760:753,758+759-754"))
        let fetch = HistoryFetch(request: .fetchHistory(after: token), model: testModel, excluding: origin)
        let plan = try fetch.makePlan()
        let statements = fetch.pipelineStatements(plan)
        let filter = #" WHERE ("xid" >= pg_snapshot_xmin($1::text::pg_snapshot) OR "xid"::text = ANY($3)) AND NOT ((pg_visible_in_snapshot("xid", $1::text::pg_snapshot) AND NOT "xid"::text = ANY($3)) OR "xid"::text = ANY($2)) AND "origin" <> $4"#
        #expect(statements.map(\.sql) == [
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
            "SELECT pg_current_snapshot()::text, (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::int8",
            #"SELECT "id", "xid"::text, "author", "context_name", "origin", "timestamp" FROM "postgres_data_history_transaction""# + filter + #" ORDER BY "id""#,
            #"SELECT "transaction_id", "entity", "change_type", "object_keys"::text, "updated_properties", "tombstones"::text FROM "postgres_data_history_change" WHERE "transaction_id" IN (SELECT "id" FROM "postgres_data_history_transaction""# + filter + #") ORDER BY "transaction_id""#,
            "COMMIT",
        ])
        let values = ["text '752:760:753,758'", "text[] {'759'}", "text[] {'754'}"]
        #expect(Array(boundValues(statements[2].bindings).prefix(3)) == values)
        #expect(boundValues(statements[2].bindings).count == 4)
        #expect(boundValues(statements[3].bindings) == boundValues(statements[2].bindings))
        #expect(statements[0].bindings.count == 0 && statements[1].bindings.count == 0 && statements[4].bindings.count == 0)
    }

    @Test func transactionsWithoutChangesLeaveTheChangesQueryOut() throws {
        var request = PersistentHistoryChangeRequest.fetchHistory(after: Date(timeIntervalSince1970: 0))
        request.resultType = .transactionsOnly
        request.authors = ["importer"]
        let fetch = HistoryFetch(request: request, model: testModel, excluding: nil)
        let statements = fetch.pipelineStatements(try fetch.makePlan())
        #expect(statements.count == 4)
        #expect(statements[2].sql.hasSuffix(#" FROM "postgres_data_history_transaction" WHERE "timestamp" > $1 AND "author" = ANY($2) ORDER BY "id""#))
        #expect(boundValues(statements[2].bindings) == ["timestamptz 1970-01-01T00:00:00Z", "text[] {'importer'}"])
    }
}
