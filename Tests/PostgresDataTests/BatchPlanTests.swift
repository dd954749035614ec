import Foundation
import PostgresClient
@testable import PostgresData
import Testing

/// The batch-request planners without a server: the statements a batch update, delete or
/// insert sends, by text and bound values; and what they refuse before sending anything.
@Suite struct BatchPlanTests {
    let item = testModel.entitiesByName["Item"]!
    let list = testModel.entitiesByName["TodoList"]!
    let team = testModel.entitiesByName["Team"]!
    let product = testModel.entitiesByName["Product"]!

    @Test func aBatchUpdateIsOneStatementCountingItsRows() throws {
        let request = BatchUpdateRequest(entityName: "Item", predicate: try FetchPredicate(format: "done == YES"),
                                         propertiesToUpdate: ["weight": 1, "notes": nil])
        let plan = try request.plan(for: item, returningIDs: false)
        #expect(plan.sql == #"WITH u AS (UPDATE "item" AS t SET "notes" = (NULL)::text, "weight" = ($1::bigint)::bigint WHERE t."done" = $2::boolean RETURNING 1) SELECT count(*) FROM u"#)
        #expect(boundValues(plan.bindings) == ["int8 1", "bool true"])
    }

    @Test func aBatchUpdateThroughAJoinChoosesItsRowsInASubqueryAndReturnsIDs() throws {
        let request = BatchUpdateRequest(entityName: "Item", predicate: try FetchPredicate(format: "list.title == %@", "Home"),
                                         propertiesToUpdate: ["weight": try .expression("weight + 1")])
        let plan = try request.plan(for: item, returningIDs: true)
        #expect(plan.sql == #"UPDATE "item" AS t SET "weight" = ((t."weight" + $1::bigint))::bigint WHERE t."id" IN (SELECT t."id" FROM "item" AS t LEFT JOIN "todo_list" AS j1 ON j1."id" = t."list_id" WHERE j1."title" = $2::text) RETURNING t."id""#)
        #expect(boundValues(plan.bindings) == ["int8 1", "text 'Home'"])
    }

    @Test func aBatchUpdateThatBreaksTheModelIsRefusedBeforeAnySQL() throws {
        let request = BatchUpdateRequest(entityName: "Item", propertiesToUpdate: ["weight": 5000])
        #expect(throws: PostgresDataError.self) { try request.plan(for: item, returningIDs: false) }
        let unknown = BatchUpdateRequest(entityName: "Item", propertiesToUpdate: ["colour": "red"])
        #expect(throws: PostgresDataError.self) { try unknown.plan(for: item, returningIDs: false) }
    }

    @Test func aBatchDeleteCountsInOneStatementOrLocksThenDeletesByKey() throws {
        let request = BatchDeleteRequest(fetchRequest: FetchRequest<Item>(predicate: try FetchPredicate(format: "list.title == %@", "Old")))
        let plan = try BatchDeletePlan(request, entity: item)
        #expect(plan.countingDelete == #"WITH d AS (DELETE FROM "item" AS t WHERE t."id" IN (SELECT t."id" FROM "item" AS t LEFT JOIN "todo_list" AS j1 ON j1."id" = t."list_id" WHERE j1."title" = $1::text) RETURNING 1) SELECT count(*) FROM d"#)
        #expect(plan.lockingSelect == #"SELECT t."id" FROM "item" AS t WHERE t."id" IN (SELECT t."id" FROM "item" AS t LEFT JOIN "todo_list" AS j1 ON j1."id" = t."list_id" WHERE j1."title" = $1::text) FOR UPDATE OF t"#)
        #expect(plan.deleteByKeys == #"DELETE FROM "item" AS t WHERE t."id" = ANY($1) RETURNING t."id""#)
        #expect(boundValues(plan.bindings) == ["text 'Old'"])
        let cascade = try #require(list.propertyIndex(named: "items"))
        #expect(BatchDeletePlan.reachingSelect(from: list, relationship: cascade) == #"SELECT "id" FROM "item" WHERE "list_id" = ANY($1) FOR UPDATE"#)
    }

    @Test func aBatchDeleteOfObjectIDsBindsTheirKeys() throws {
        let ids = [3, 5].map { ManagedObjectID(entity: team, primaryKey: $0) }
        let plan = try BatchDeletePlan(BatchDeleteRequest(objectIDs: ids), entity: team)
        #expect(plan.countingDelete == #"WITH d AS (DELETE FROM "team" AS t WHERE t."id" = ANY($1) RETURNING 1) SELECT count(*) FROM d"#)
        #expect(boundValues(plan.bindings) == ["int8[] {3,5}"])
    }

    @Test func aBatchInsertCopiesItsRowsAndAnUpsertIsOneInsertOfArrays() throws {
        let teams = try BatchInsertRequest(entityName: "Team", objects: [["name": "Lions"], ["name": "Tigers"]])
        #expect(try teams.plan(for: team).steps.map(describe) == ["COPY team (name) 2 rows"])
        var request = try BatchInsertRequest(entityName: "Product", objects: [["sku": "A-1", "title": "Anvil"], ["sku": "B-2", "title": "Bell"]])
        request.onConflict = .update()
        let upsert = try request.plan(for: product, returningIDs: true)
        // Only the keys the objects carry are updated; `xmax = 0` tells inserted rows from updated ones.
        #expect(upsert.steps.map(describe) == [#"INSERT INTO "product" ("sku", "title", "price", "stock") SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) ON CONFLICT ("sku") DO UPDATE SET "title" = EXCLUDED."title" RETURNING "id", xmax = 0 | text[] {'A-1','B-2'}; text[] {'Anvil','Bell'}; int8[] {0,0}; int8[] {0,0} | ids | updates ["title"]"#])
    }

    /// A dictionary handler is called at execution: planning its COPY calls it not at all;
    /// a plan that returns IDs collects its rows (and groups them by the keys they supply).
    @Test func aDictionaryHandlersCopyIsPlannedWithoutCallingIt() throws {
        var calls = 0
        var request = try BatchInsertRequest(entityName: "Team", dictionaryHandler: { object in
            calls += 1
            guard calls <= 2 else {
                calls = 0
                return true
            }
            object["name"] = calls == 1 ? "Lions" : "Tigers"
            return false
        })
        #expect(try request.plan(for: team).steps.map(describe) == ["COPY team (name) from the handler"])
        request.resultType = .objectIDs
        #expect(try request.plan(for: team).steps.map(describe)
            == [#"INSERT INTO "team" ("name") SELECT * FROM unnest($1::text[]) RETURNING "id" | text[] {'Lions','Tigers'} | ids"#])
    }

    @Test func aBatchInsertThatBreaksTheModelIsRefusedBeforeAnySQL() throws {
        let missing = try BatchInsertRequest(entityName: "Item", objects: [["weight": 1]])
        #expect(throws: PostgresDataError.self) { try missing.plan(for: item) }
        let tooHeavy = try BatchInsertRequest(entityName: "Item", objects: [["name": "x", "weight": 5000]])
        #expect(throws: PostgresDataError.self) { try tooHeavy.plan(for: item) }
    }

    func describe(_ step: BatchInsertPlan.Step) -> String {
        switch step {
        case .copy(let table, let columns, _, let count, let isStaging):
            return "COPY \(table) (\(columns.joined(separator: ", "))) \(count) rows\(isStaging ? " staging" : "")"
        case .stream(let table, let columns, _, let isStaging):
            return "COPY \(table) (\(columns.joined(separator: ", "))) from the handler\(isStaging ? " staging" : "")"
        case .execute(let sql): return sql
        case .insert(let sql, let bindings, let returnsIDs, let updated):
            return "\(sql) | \(boundValues(bindings).joined(separator: "; "))\(returnsIDs ? " | ids" : "")\(updated.map { " | updates \($0)" } ?? "")"
        }
    }
}
