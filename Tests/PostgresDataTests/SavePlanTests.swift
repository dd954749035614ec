import Foundation
import PostgresClient
@testable import PostgresData
import Testing

/// The save planner without a server: the statements a save sends, by text and parameters.
@Suite struct SavePlanTests {
    let item = testModel.entitiesByName["Item"]!

    func values(name: String, weight: Int64) -> [AttributeValue] {
        var values = [AttributeValue](repeating: .null, count: item.properties.count)
        values[item.propertyIndex(named: "name")!] = .string(name)
        values[item.propertyIndex(named: "createdAt")!] = .date(Date(timeIntervalSince1970: 0))
        values[item.propertyIndex(named: "done")!] = .boolean(false)
        values[item.propertyIndex(named: "weight")!] = .integer(weight)
        return values
    }

    func update(_ key: Int64, weight: Int64) -> SavePlan.Update {
        SavePlan.Update(entity: item, key: key, version: 700, values: values(name: "n\(key)", weight: weight),
                        changed: [item.propertyIndex(named: "weight")!])
    }

    @Test func elementsAreGroupedByEntityInFirstSeenOrder() throws {
        let team = try #require(testModel.entitiesByName["Team"])
        let keyed: [(EntityDescription, Int)] = [(item, 1), (team, 2), (item, 3), (item, 4), (team, 5)]
        let groups = SavePlan.grouped(keyed, by: \.0)
        #expect(groups.map { $0.0 === item } == [true, false])
        #expect(groups.map { $0.1.map(\.1) } == [[1, 3, 4], [2, 5]])
        let one = SavePlan.grouped(keyed.filter { $0.0 === team }, by: \.0)
        #expect(one.count == 1 && one[0].0 === team && one[0].1.map(\.1) == [2, 5])
        #expect(SavePlan.grouped([] as [(EntityDescription, Int)], by: \.0).isEmpty)
    }

    /// What a save reports to its metrics comes from its plan: rows by kind and entity,
    /// entities in the order first met.
    @Test func aPlanCountsTheRowsItWritesByKindAndEntity() throws {
        let team = try #require(testModel.entitiesByName["Team"])
        func insert(_ entity: EntityDescription, _ key: Int64) -> SavePlan.Insert {
            SavePlan.Insert(entity: entity, key: key, values: entity === item ? values(name: "n\(key)", weight: 1)
                                : [AttributeValue](repeating: .null, count: entity.properties.count))
        }
        let plan = try SavePlan(inserts: [insert(item, 1), insert(team, 2), insert(item, 3), insert(item, 4)],
                                updates: [update(7, weight: 3), update(9, weight: 4)],
                                deletes: [SavePlan.Delete(entity: team, key: 5, version: 700)], joinInserts: [], joinDeletes: [])
        let counted = plan.writtenRows.map { "\($0.kind.rawValue) \($0.entity.name) \($0.count)" }
        #expect(counted == ["insert Item 3", "insert Team 1", "update Item 2", "delete Team 1"])
        let none = try SavePlan(inserts: [], updates: [], deletes: [], joinInserts: [], joinDeletes: [])
        #expect(none.writtenRows.isEmpty)
    }

    @Test func oneChangedRowIsAScalarUpdateFollowedByItsVerification() throws {
        let plan = try SavePlan(inserts: [], updates: [update(7, weight: 3)], deletes: [], joinInserts: [], joinDeletes: [])
        #expect(plan.isPipelined)
        #expect(plan.statements.count == 1)
        let statement = plan.statements[0]
        #expect(statement.sql == #"UPDATE "item" AS t SET "weight" = $3::bigint WHERE t."id" = $1 AND t.xmin = $2 RETURNING t."id", t.xmin"#)
        #expect(statement.bindings.count == 3)
        #expect(statement.verification?.sql == #"SELECT 1 / (count(*) = 1)::int FROM "item" AS t WHERE t."id" = $1 AND t.xmin = pg_current_xact_id()::xid"#)
        guard case .versions(_, let keys, let versions) = statement.check else { Issue.record("no version check"); return }
        #expect(keys == [7] && versions == [700])
    }

    @Test func severalRowsAreOneSetBasedUpdateVerifiedTogether() throws {
        let plan = try SavePlan(inserts: [], updates: [update(7, weight: 3), update(9, weight: 4)], deletes: [],
                                joinInserts: [], joinDeletes: [])
        let statement = try #require(plan.statements.first)
        #expect(statement.sql.hasPrefix(#"UPDATE "item" AS t SET "weight" = u.c0 FROM unnest($1::bigint[], $2::xid[], $3::bigint[]) AS u(k, v, c0)"#))
        #expect(statement.verification?.sql.contains(#"count(*) = 2"#) == true)
        #expect(statement.verification?.sql.contains("= ANY($1)") == true)
    }

    @Test func updatesAreGroupedByEntityThenByChangedColumnsInTheOrderTheyCameIn() throws {
        let tag = try #require(testModel.entitiesByName["Tag"])
        func changing(_ key: Int64, _ names: String...) -> SavePlan.Update {
            var row = update(key, weight: key)
            row.changed = names.compactMap(item.propertyIndex(named:))
            return row
        }
        let tagged = SavePlan.Update(entity: tag, key: 3, version: 701, values: [.string("red"), .null],
                                     changed: [tag.propertyIndex(named: "label")!])
        let updates = [changing(7, "weight"), tagged, changing(8, "name"), changing(9, "weight"),
                       changing(12, "name", "weight"), changing(10, "name")]
        let plan = try SavePlan(inserts: [], updates: updates, deletes: [], joinInserts: [], joinDeletes: [])
        let groups = plan.statements.map { statement -> [Int64] in
            guard case .versions(_, let keys, _) = statement.check else { return [] }
            return keys
        }
        #expect(groups == [[7, 9], [8, 10], [12], [3]])
        #expect(plan.statements[0].sql.contains(#"SET "weight" = u.c0"#))
        #expect(plan.statements[1].sql.contains(#"SET "name" = u.c0"#))
        #expect(plan.statements[2].sql.contains(#"SET "name" = $3::text, "weight" = $4::bigint"#))
        #expect(plan.statements[3].sql.hasPrefix(#"UPDATE "tag" AS t SET "label" = $3::text"#))
        #expect(boundValues(plan.statements[1].bindings) == ["int8[] {8,10}", "xid[] {700,700}", "text[] {'n8','n10'}"])
    }

    @Test func deletionsFailByThemselvesWhenARowChangedUnderneath() throws {
        let plan = try SavePlan(inserts: [], updates: [], deletes: [.init(entity: item, key: 5, version: 9)],
                                joinInserts: [], joinDeletes: [])
        let sql = try #require(plan.statements.first?.sql)
        #expect(sql.hasPrefix(#"WITH w AS (DELETE FROM "item" AS t USING unnest($1::bigint[], $2::xid[]) AS u(k, v)"#))
        #expect(sql.contains("WHEN c.n = 1 THEN true ELSE ('\(SavePlan.versionCheckMarker): '"))
        var error = PostgresError(.server, message: #"invalid input syntax for type boolean: "postgres-data version check: 0 of 1 rows""#)
        error.sqlState = SQLState("22P02")
        #expect(SavePlan.isFailedVersionCheck(error))
        error.message = #"invalid input syntax for type boolean: "yes please""#
        #expect(!SavePlan.isFailedVersionCheck(error))
    }

    @Test func oneNewRowIsAnInsertWithValues() throws {
        let plan = try SavePlan(inserts: [.init(entity: item, key: 42, values: values(name: "new", weight: 1))], updates: [],
                                deletes: [], joinInserts: [], joinDeletes: [])
        let statement = try #require(plan.statements.first)
        #expect(statement.sql.hasPrefix(#"INSERT INTO "item" ("id", "name", "created_at", "done", "weight""#))
        #expect(statement.sql.contains("VALUES ($1, $2::text, $3::timestamp with time zone, $4::boolean, $5::bigint"))
        #expect(statement.bindings.count == item.columnIndices.count + 1)
        #expect(plan.insertsRows && statement.verification == nil)
    }

    @Test func largeSavesAreNotPipelinedAndKeepTheirReturnedKeysAsTheCheck() throws {
        let updates = (1...Int64(SavePlan.pipelineLimit + 1)).map { update($0, weight: 1) }
        let plan = try SavePlan(inserts: [], updates: updates, deletes: [], joinInserts: [], joinDeletes: [])
        #expect(!plan.isPipelined)
        #expect(plan.statements.allSatisfy { $0.verification == nil && !$0.sql.hasPrefix("WITH") })
    }
}

/// Key allocation without a server: one statement for every entity that needs keys.
@Suite struct KeyAllocationTests {
    let item = testModel.entitiesByName["Item"]!
    let team = testModel.entitiesByName["Team"]!

    var sequences: [String] {
        testModel.entities.map { "public.\($0.tableName)_id_seq" }
    }

    @Test func oneStatementTakesEachEntitysKeysFromItsSequence() throws {
        let allocation = try #require(try KeyAllocation([(item, 3), (team, 0), (team, 2)], sequences: sequences))
        #expect(allocation.sql == #"SELECT 0::int4, array_agg(nextval('public.item_id_seq'::regclass)) FROM generate_series(1, $1) UNION ALL SELECT 1::int4, array_agg(nextval('public.team_id_seq'::regclass)) FROM generate_series(1, $2)"#)
        #expect(boundValues(allocation.bindings) == ["int8 3", "int8 2"])
        let keys = allocation.keys(from: [(1, [9, 8]), (0, [4, 5, 6]), (7, [1])])
        #expect(keys[item] == [4, 5, 6])
        #expect(keys[team] == [8, 9], "sorted when the server's order was not ascending")
        #expect(keys.count == 2, "a position the statement never had is ignored")
    }

    @Test func nothingToAllocateIsNoStatement() throws {
        #expect(try KeyAllocation([(item, 0)], sequences: sequences) == nil)
    }
}
