import Foundation
import PostgresClient
@testable import PostgresData
import Testing

/// The fetch planners without a server: the SQL a fetch, a count or a dictionary fetch sends,
/// by text and bound values.
@Suite struct FetchPlanTests {
    let item = testModel.entitiesByName["Item"]!
    let player = testModel.entitiesByName["Player"]!

    @Test func aPredicateSortsAndAWindowAreOneParameterisedSelect() throws {
        var request = FetchRequest<Item>(predicate: try FetchPredicate(format: "done == NO AND weight >= %@ AND name BEGINSWITH[c] %@", 10, "Buy"),
                                         sortDescriptors: [FetchSortDescriptor(key: "weight", ascending: false),
                                                           FetchSortDescriptor(key: "name", caseInsensitive: true)])
        request.fetchLimit = 20
        request.fetchOffset = 40
        let (sql, bindings) = try request.sql(for: item, columns: PersistentStoreCoordinator.selectList(item))
        #expect(sql == #"SELECT t."id", t.xmin, t."name", t."created_at", t."done", t."weight", t."notes", t."list_id" FROM "item" AS t WHERE ((t."done" = $1::boolean) AND (t."weight" >= $2::bigint) AND (lower(t."name") LIKE (replace(replace(replace(lower($3::text), '\', '\\'), '%', '\%'), '_', '\_') || '%'))) ORDER BY t."weight" DESC NULLS LAST, lower(t."name") ASC NULLS FIRST, t."id" LIMIT $4 OFFSET $5"#)
        // The pattern's own % and _ are escaped on the server: a value is never SQL.
        #expect(boundValues(bindings) == ["bool false", "int8 10", "text 'Buy'", "int8 20", "int8 40"])
    }

    @Test func unsavedChangesAreExcludedByKeyAndAWindowIsMadeDeterministic() throws {
        var request = FetchRequest<Item>()
        request.fetchLimit = 5
        let (sql, bindings) = try request.sql(for: item, columns: "t.\"id\"", excluding: [3, 4])
        #expect(sql == #"SELECT t."id" FROM "item" AS t WHERE (t."id" <> ALL($1)) ORDER BY t."id" LIMIT $2"#)
        #expect(boundValues(bindings) == ["int8[] {3,4}", "int8 5"])
    }

    @Test func likeTakesBackslashEscapesAsCoreDataDoes() {
        func like(_ subject: String, _ pattern: String) -> Bool {
            PredicateEvaluator.like(Array(subject.unicodeScalars)[...], Array(pattern.unicodeScalars)[...])
        }
        #expect(like("a*b", #"a\*b"#) && !like("axb", #"a\*b"#))
        #expect(like("x?y", #"x\?y"#) && !like("xzy", #"x\?y"#))
        #expect(like(#"\tail"#, #"\\*"#) && !like("tail", #"\\*"#))
        #expect(like("anything", "*") && like("a", "?") && !like("ab", "?"))
    }

    @Test func aCountHasNoOrderAndNoWindow() throws {
        var request = FetchRequest<Item>(predicate: try FetchPredicate(format: "list.title == %@", "Home"),
                                         sortDescriptors: [FetchSortDescriptor(key: "name")])
        request.resultType = .count
        request.fetchLimit = 3
        let (sql, bindings) = try request.sql(for: item, columns: "count(*)")
        #expect(sql == #"SELECT count(*) FROM "item" AS t LEFT JOIN "todo_list" AS j1 ON j1."id" = t."list_id" WHERE (j1."title" = $1::text)"#)
        #expect(boundValues(bindings) == ["text 'Home'"])
    }

    @Test func aToManyPredicateIsASubqueryNotAJoinThatRepeatsRows() throws {
        let request = FetchRequest<Player>(predicate: try FetchPredicate(format: "ANY tags.label IN %@", ["a", "b"]))
        let (sql, bindings) = try request.sql(for: player, columns: "t.\"id\"")
        #expect(sql == #"SELECT t."id" FROM "player" AS t WHERE (EXISTS (SELECT 1 FROM "player_tags" AS l1 JOIN "tag" AS s1 ON s1."id" = l1."tag_id" WHERE l1."player_id" = t."id" AND ((s1."label" = ANY($1::text[])))))"#)
        #expect(boundValues(bindings) == ["text[] {'a','b'}"])
    }

    @Test func aDictionaryFetchGroupsAndAggregates() throws {
        var request = FetchRequest<FetchedDictionary>(entityName: "Item", predicate: try FetchPredicate(format: "weight > %@", 0))
        request.resultType = .dictionary
        request.propertiesToFetch = [.keyPath("done"), .expression(ExpressionDescription(name: "total", function: .sum, keyPath: "weight"))]
        request.propertiesToGroupBy = ["done"]
        request.sortDescriptors = [FetchSortDescriptor(key: "total", ascending: false)]
        let (sql, bindings, columns) = try request.dictionarySQL(for: item)
        #expect(sql == #"SELECT t."done" AS "done", coalesce(sum(t."weight"), 0)::bigint AS "total" FROM "item" AS t WHERE t."weight" > $1::bigint GROUP BY t."done" ORDER BY "total" DESC NULLS LAST"#)
        #expect(boundValues(bindings) == ["int8 0"])
        #expect(columns.map(\.name) == ["done", "total"])
    }

    @Test func aKeyThatIsNotInTheModelIsAnErrorBeforeAnySQL() throws {
        let request = FetchRequest<Item>(predicate: try FetchPredicate(format: "colour == %@", "red"))
        #expect(throws: PostgresDataError.self) { try request.sql(for: item, columns: "t.\"id\"") }
    }
}

/// Rows by key and related rows without a server.
@Suite struct RelationshipFetchPlanTests {
    @Test func faultsAndPrefetchesReadByKeyArrays() throws {
        let list = testModel.entitiesByName["TodoList"]!
        let player = testModel.entitiesByName["Player"]!
        #expect(RelationshipFetchPlan.rows(of: list) == #"SELECT t."id", t.xmin, t."title" FROM "todo_list" AS t WHERE t."id" = ANY($1)"#)
        let items = try #require(list.propertyIndex(named: "items"))
        // The owner's key follows the destination's columns (here the same foreign key again).
        #expect(RelationshipFetchPlan.ownedRows(of: list, relationship: items) == #"SELECT t."id", t.xmin, t."name", t."created_at", t."done", t."weight", t."notes", t."list_id", t."list_id" FROM "item" AS t WHERE t."list_id" = ANY($1) ORDER BY t."id""#)
        let tags = try #require(player.propertyIndex(named: "tags"))
        #expect(RelationshipFetchPlan.ownedRows(of: player, relationship: tags) == #"SELECT t."id", t.xmin, t."label", l."player_id" FROM "player_tags" AS l JOIN "tag" AS t ON t."id" = l."tag_id" WHERE l."player_id" = ANY($1) ORDER BY t."id""#)
    }
}
