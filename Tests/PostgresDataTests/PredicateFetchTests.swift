import Foundation
import PostgresData
import Testing

/// Predicates and sort descriptors compiled to SQL and run against PostgreSQL.
@Suite struct PredicateFetchTests {
    /// Lists A (items a1…a3) and B (b1, B2); tags on players; notes NULL on some items.
    func seeded() async throws -> PersistentContainer {
        let container = try await makeContainer()
        try await container.performBackgroundTask { context in
            let a = TodoList(context: context)
            a.title = "A"
            let b = TodoList(context: context)
            b.title = "B"
            let rows: [(String, Int, Bool, String?, TodoList?)] = [
                ("a1", 1, true, "x", a), ("a2", 5, true, nil, a), ("a3", 9, false, "50% off", a),
                ("b1", 20, true, "Ünïcode", b), ("B2", 0, false, nil, b), ("lonely", 7, false, "é", nil),
            ]
            for (name, weight, done, notes, list) in rows {
                let item = Item(context: context)
                item.name = name
                item.weight = weight
                item.done = done
                item.notes = notes
                item.list = list
            }
            let fast = Tag(context: context)
            fast.label = "fast"
            let tall = Tag(context: context)
            tall.label = "tall"
            let ann = Player(context: context)
            ann.name = "Ann"
            ann.tags = [fast, tall]
            let bob = Player(context: context)
            bob.name = "Bob"
            bob.tags = [tall]
            try context.save()
        }
        return container
    }

    func names(_ container: PersistentContainer, _ format: String, _ arguments: Any?...) async throws -> [String] {
        let predicate = try FetchPredicate(format: format, argumentArray: arguments)
        return try await container.performBackgroundTask { context in
            try context.fetch(FetchRequest<Item>(predicate: predicate, sortDescriptors: [FetchSortDescriptor(key: "name")])).map(\.name)
        }
    }

    @Test func comparisonsAndNil() async throws {
        let c = try await seeded()
        #expect(try await names(c, "weight >= 5 AND weight <= 9") == ["a2", "a3", "lonely"])
        #expect(try await names(c, "weight BETWEEN {1, 5}") == ["a1", "a2"])
        #expect(try await names(c, "weight IN %@", [0, 20]) == ["B2", "b1"])
        #expect(try await names(c, "done == YES AND weight > %d", 1) == ["a2", "b1"])
        #expect(try await names(c, "notes == nil") == ["B2", "a2"])
        // != counts NULL as different, as evaluating in memory does.
        #expect(try await names(c, "notes != 'x'") == ["B2", "a2", "a3", "b1", "lonely"])
        #expect(try await names(c, "NOT (weight < 9) OR name == %@", "a1") == ["a1", "a3", "b1"])
        #expect(try await names(c, "weight * 2 + 1 > 18") == ["a3", "b1"])
        #expect(try await names(c, "TRUEPREDICATE").count == 6)
        #expect(try await names(c, "FALSEPREDICATE").isEmpty)
    }

    @Test func stringOperatorsEscapeWildcards() async throws {
        let c = try await seeded()
        #expect(try await names(c, "name BEGINSWITH 'b'") == ["b1"])
        #expect(try await names(c, "name BEGINSWITH[c] 'b'") == ["B2", "b1"])
        #expect(try await names(c, "name ENDSWITH '2'") == ["B2", "a2"])
        #expect(try await names(c, "notes CONTAINS '%'") == ["a3"])
        #expect(try await names(c, "notes CONTAINS '_'").isEmpty)
        #expect(try await names(c, "name LIKE 'a?'") == ["a1", "a2", "a3"])
        #expect(try await names(c, "name LIKE[c] 'b*'") == ["B2", "b1"])
        #expect(try await names(c, "name MATCHES '[ab][0-9]'") == ["a1", "a2", "a3", "b1"])
        #expect(try await names(c, "name ==[c] 'b2'") == ["B2"])
        #expect(try await names(c, "name == %@", "'; DROP TABLE item; --").isEmpty)
        #expect(try await c.rawIntegers("SELECT count(*) FROM item") == [6])
    }

    /// MATCHES reads ICU patterns, as Core Data does; what PostgreSQL cannot mean the same way
    /// is refused before any query, naming the construct.
    @Test func matchesRefusesICUConstructsWithoutAPostgreSQLMeaning() async throws {
        let c = try await seeded()
        #expect(try await names(c, "name MATCHES %@", "(?i)B\\d") == ["B2", "b1"])
        #expect(try await names(c, "name MATCHES %@", "\\Qa1\\E|b\\d\\b") == ["a1", "b1"])
        for (pattern, fragment) in [("a*+", "possessive"), ("(?i:a)1", "options inside the pattern"),
                                    ("(?>a)1", "atomic"), ("(?<n>a)1", "named"), ("a[", "not one")] {
            let error = await captureDataError { _ = try await self.names(c, "name MATCHES %@", pattern) }
            guard case .invalidRequest(let reason)? = error else {
                Issue.record("\(pattern): expected invalidRequest, got \(String(describing: error))")
                continue
            }
            #expect(reason.contains(fragment), "\(pattern): \(reason)")
        }
    }

    /// FUNCTION(value, 'method') for the NSString and NSNumber methods with a SQL meaning;
    /// others are refused when the format is parsed, naming those that work.
    @Test func functionCallsTheMethodsWithASQLMeaning() async throws {
        let c = try await seeded()
        #expect(try await names(c, "FUNCTION(name, 'uppercaseString') == 'B2'") == ["B2"])
        #expect(try await names(c, "FUNCTION(name, 'length') > 2") == ["lonely"])
        #expect(try await names(c, "FUNCTION(weight, 'stringValue') == '20'") == ["b1"])
        #expect(throws: PredicateSyntaxError.self) { try FetchPredicate(format: "FUNCTION(name, 'reversed') == 'x'") }
        #expect(throws: PredicateSyntaxError.self) { try FetchPredicate(format: "FUNCTION(name, 'length', 2) == 'x'") }
        let error = await captureDataError { _ = try await self.names(c, "FUNCTION(weight, 'uppercaseString') == 'X'") }
        guard case .invalidRequest(let reason)? = error else {
            Issue.record("expected invalidRequest, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("needs a string"))
    }

    @Test func keyPathsThroughRelationships() async throws {
        let c = try await seeded()
        #expect(try await names(c, "list.title == 'A'") == ["a1", "a2", "a3"])
        #expect(try await names(c, "list == nil") == ["lonely"])
        let lists = { (format: String) async throws -> [String] in
            let predicate = try FetchPredicate(format: format)
            return try await c.performBackgroundTask { context in
                try context.fetch(FetchRequest<TodoList>(predicate: predicate, sortDescriptors: [FetchSortDescriptor(key: "title")])).map(\.title)
            }
        }
        #expect(try await lists("ANY items.name BEGINSWITH 'b'") == ["B"])
        #expect(try await lists("items.@count >= 3") == ["A"])
        #expect(try await lists("ALL items.weight < 10") == ["A"])
        #expect(try await lists("NONE items.done == YES") == [])
        #expect(try await lists("items.@sum.weight > 15") == ["B"])
        #expect(try await lists("items.@max.weight == 9") == ["A"])
        #expect(try await lists("SUBQUERY(items, $i, $i.done == NO AND $i.weight > 5).@count > 0") == ["A"])
        let players = try await c.performBackgroundTask { context in
            try context.fetch(FetchRequest<Player>(predicate: try FetchPredicate(format: "ANY tags.label == 'fast'"))).map(\.name)
        }
        #expect(players == ["Ann"])
    }

    @Test func sortingNullsCaseLimitAndOffset() async throws {
        let c = try await seeded()
        let sorted = { (descriptors: [FetchSortDescriptor], limit: Int, offset: Int) async throws -> [String] in
            try await c.performBackgroundTask { context in
                var request = FetchRequest<Item>(sortDescriptors: descriptors)
                request.fetchLimit = limit
                request.fetchOffset = offset
                return try context.fetch(request).map(\.name)
            }
        }
        #expect(try await sorted([FetchSortDescriptor(key: "name", caseInsensitive: true)], 0, 0) == ["a1", "a2", "a3", "b1", "B2", "lonely"])
        #expect(try await sorted([FetchSortDescriptor(key: "weight", ascending: false)], 2, 1) == ["a3", "lonely"])
        // NULL first ascending (Core Data's order), then by name.
        #expect(try await sorted([FetchSortDescriptor(key: "notes"), FetchSortDescriptor(key: "name")], 3, 0) == ["B2", "a2", "a3"])
        #expect(try await sorted([FetchSortDescriptor(key: "list.title", ascending: false), FetchSortDescriptor(key: "name")], 2, 0) == ["B2", "b1"])
        let count = try await c.performBackgroundTask { context in
            try context.count(for: FetchRequest<Item>(predicate: try FetchPredicate(format: "weight > 4")))
        }
        #expect(count == 4)
    }

    @Test func badKeysAndTypesAreClearErrors() async throws {
        let c = try await seeded()
        let error = { (format: String, arguments: [Any?]) async -> String in
            do {
                _ = try await names(c, format, arguments)
                return "no error"
            } catch {
                return "\(error)"
            }
        }
        #expect(await error("naem == 'x'", []).contains("Item has no property \"naem\" (in the key path naem). Did you mean \"name\"?"))
        #expect(await error("weight == 'heavy'", []).contains("weight is integer64 and cannot be compared with a String value"))
        #expect(await error("list.title.size == 1", []).contains("TodoList.title is an attribute"))
        #expect(await error("weight CONTAINS 'x'", []).contains("CONTAINS compares strings, and weight is integer64"))
    }
}
