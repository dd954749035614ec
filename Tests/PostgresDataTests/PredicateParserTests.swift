import Foundation
@testable import PostgresData
import PostgresDataTesting
import Testing

@Suite struct PredicateParserTests {
    func parse(_ format: String, _ arguments: Any?...) throws -> PredicateNode {
        try FetchPredicate(format: format, argumentArray: arguments).node
    }

    func comparison(_ key: String, _ op: PredicateComparison.Operator, _ value: AttributeValue,
                    quantifier: PredicateComparison.Quantifier = .direct) -> PredicateNode {
        .comparison(PredicateComparison(quantifier: quantifier, left: .keyPath(key.split(separator: ".").map(String.init)),
                                        op: op, caseInsensitive: false, diacriticInsensitive: false, right: .constant(value)))
    }

    @Test func andBindsTighterThanOrAndNotTighterThanAnd() throws {
        let node = try parse("a == 1 OR b == 2 AND NOT c == 3")
        #expect(node == .or([comparison("a", .equal, .integer(1)),
                              .and([comparison("b", .equal, .integer(2)), .not(comparison("c", .equal, .integer(3)))])]))
        #expect(try parse("(a == 1 || b == 2) && !(c = 3)") == .and([
            .or([comparison("a", .equal, .integer(1)), comparison("b", .equal, .integer(2))]),
            .not(comparison("c", .equal, .integer(3))),
        ]))
    }

    @Test(arguments: [
        ("age == 3", PredicateComparison.Operator.equal), ("age = 3", .equal), ("age != 3", .notEqual), ("age <> 3", .notEqual),
        ("age < 3", .less), ("age <= 3", .lessOrEqual), ("age =< 3", .lessOrEqual), ("age > 3", .greater),
        ("age >= 3", .greaterOrEqual), ("age => 3", .greaterOrEqual),
    ])
    func comparisonOperators(format: String, op: PredicateComparison.Operator) throws {
        #expect(try parse(format) == comparison("age", op, .integer(3)))
    }

    @Test func stringOperatorsTakeCaseAndDiacriticOptions() throws {
        guard case .comparison(let c) = try parse("name BEGINSWITH[cd] 'Ab'") else { Issue.record("not a comparison"); return }
        #expect(c.op == .beginsWith && c.caseInsensitive && c.diacriticInsensitive && c.right == .constant(.string("Ab")))
        for (keyword, op) in [("contains", PredicateComparison.Operator.contains), ("ENDSWITH", .endsWith), ("like", .like),
                              ("MATCHES", .matches)] {
            guard case .comparison(let c) = try parse("name \(keyword)[c] \"x\"") else { Issue.record("not a comparison"); return }
            #expect(c.op == op && c.caseInsensitive && !c.diacriticInsensitive)
        }
    }

    @Test func literalsArgumentsAndLists() throws {
        #expect(try parse("done == YES AND notes == nil AND ok = FALSE AND x == NULL") == .and([
            comparison("done", .equal, .boolean(true)), comparison("notes", .equal, .null),
            comparison("ok", .equal, .boolean(false)), comparison("x", .equal, .null),
        ]))
        #expect(try parse("%K >= %@", "weight", 10) == comparison("weight", .greaterOrEqual, .integer(10)))
        // Arguments beyond those the format uses are ignored, as NSPredicate ignores them.
        #expect(try parse("weight >= %@", 10, "unused") == comparison("weight", .greaterOrEqual, .integer(10)))
        #expect(try parse("ratio < %f AND n == %d", 0.5, 7) == .and([comparison("ratio", .less, .double(0.5)),
                                                                        comparison("n", .equal, .integer(7))]))
        let day = Date(timeIntervalSince1970: 86_400)
        #expect(try parse("createdAt > %@", day) == comparison("createdAt", .greater, .date(day)))
        guard case .comparison(let between) = try parse("age BETWEEN {1, 10}") else { Issue.record("not a comparison"); return }
        #expect(between.op == .between && between.right == .list([.constant(.integer(1)), .constant(.integer(10))]))
        guard case .comparison(let inList) = try parse("name IN %@", ["a", "b"]) else { Issue.record("not a comparison"); return }
        #expect(inList.right == .list([.constant(.string("a")), .constant(.string("b"))]))
        #expect(try parse("a == -3 AND b == 1.5e3 AND c == 'it\\'s'") == .and([
            comparison("a", .equal, .integer(-3)), comparison("b", .equal, .double(1500)), comparison("c", .equal, .string("it's")),
        ]))
    }

    @Test func castNamesACoreDataType() throws {
        guard case .comparison(let comparison) = try parse("CAST(created, 'NSNumber') > 5") else { Issue.record("not a comparison"); return }
        #expect(comparison.left == .cast(.keyPath(["created"]), .double))
        #expect(throws: PredicateSyntaxError.self) { try parse("CAST(created, 'NSWidget') > 5") }
        #expect(throws: PredicateSyntaxError.self) { try parse("CAST(created) > 5") }
    }

    @Test func powerBindsTighterThanMultiplicationAndToTheRight() throws {
        guard case .comparison(let comparison) = try parse("a * b ** c ** 2 > 1") else { Issue.record("not a comparison"); return }
        #expect(comparison.left == .arithmetic(.multiply, .keyPath(["a"]),
                                               .arithmetic(.power, .keyPath(["b"]), .arithmetic(.power, .keyPath(["c"]), .constant(.integer(2))))))
    }

    @Test func keyPathsAggregatesQuantifiersAndSubqueries() throws {
        #expect(try parse("list.title == 'x'") == comparison("list.title", .equal, .string("x")))
        guard case .comparison(let any) = try parse("ANY tags.label == 'fast'") else { Issue.record("not a comparison"); return }
        #expect(any.quantifier == .any && any.left == .keyPath(["tags", "label"]))
        guard case .comparison(let count) = try parse("items.@count > 2") else { Issue.record("not a comparison"); return }
        #expect(count.left == .count(["items"]))
        guard case .comparison(let sum) = try parse("items.@sum.weight >= 10") else { Issue.record("not a comparison"); return }
        #expect(sum.left == .aggregate(.sum, collection: ["items"], key: ["weight"]))
        guard case .comparison(let sub) = try parse("SUBQUERY(items, $i, $i.done == NO AND $i.weight > 5).@count > 0") else {
            Issue.record("not a comparison")
            return
        }
        guard case .subquery(let collection, let variable, _) = sub.left else { Issue.record("not a subquery"); return }
        #expect(collection == ["items"] && variable == "i")
        guard case .comparison(let math) = try parse("weight * 2 + 1 > 10") else { Issue.record("not a comparison"); return }
        #expect(math.left == .arithmetic(.add, .arithmetic(.multiply, .keyPath(["weight"]), .constant(.integer(2))), .constant(.integer(1))))
        #expect(try parse("TRUEPREDICATE") == .constant(true))
        #expect(try parse("#size == 3") == comparison("size", .equal, .integer(3)))
    }

    @Test func variablesAreSubstitutedLater() throws {
        let template = try FetchPredicate(format: "age >= $MIN AND name == $NAME")
        let bound = try template.substituting(["MIN": 18, "NAME": "Ann"])
        #expect(bound.node == .and([comparison("age", .greaterOrEqual, .integer(18)), comparison("name", .equal, .string("Ann"))]))
        #expect(throws: PredicateSyntaxError.self) { try template.substituting(["MIN": 1]) }
    }

    @Test(arguments: [
        ("age >= 100 AND weight >=", "expected a value after '>=' at column 25"),
        ("age >=", "expected a value after '>=' at column 7"),
        ("name == 'open", "unterminated string (missing ') at column 9"),
        ("age 3", "expected a comparison operator (==, !=, <, <=, >, >=, IN, CONTAINS, BEGINSWITH, ENDSWITH, LIKE, MATCHES, BETWEEN) after 'age', found 3 at column 5"),
        ("age == 1 age == 2", "expected AND, OR or the end of the predicate, found 'age' at column 10"),
        ("age == %x", "unknown format specifier; use %@, %K, %d or %f at column 8"),
        ("age == %@", "the format uses more arguments than the 0 given at column 8"),
        ("(age == 1", "expected ')' to close the '(' at column 1, found the end at column 10"),
        ("name CONTAINS[x] 'a'", "expected c, d or cd inside '[ ]' after CONTAINS, found 'x' at column 15"),
        ("AND == 1", "expected a value, found the keyword AND (escape a key of that name as #AND) at column 1"),
        ("items.@median.weight > 1", "unknown key-path function @median; use @count, @sum, @avg, @min or @max at column 7"),
        ("age == 1 ^ 2", "unexpected character '^' at column 10"),
    ])
    func malformedFormatsSayWhatAndWhere(format: String, message: String) {
        do {
            _ = try FetchPredicate(format: format)
            Issue.record("\(format) must not parse")
        } catch {
            #expect("\(error.message) at column \(error.column)" == message)
        }
    }

    /// A format's tokens are kept after its first parse; each later parse binds its own
    /// arguments, and a format that does not lex throws the same error every time.
    @Test func aFormatParsedAgainBindsItsNewArguments() throws {
        let format = "name == %@ AND weight > %d"
        #expect(try parse(format, "Ann", 1) == .and([comparison("name", .equal, .string("Ann")), comparison("weight", .greater, .integer(1))]))
        #expect(try parse(format, "Bob", 2) == .and([comparison("name", .equal, .string("Bob")), comparison("weight", .greater, .integer(2))]))
        #expect(try PredicateLexer.cachedTokens(format) == PredicateLexer.tokens(format))
        for _ in 0..<2 {
            #expect(throws: PredicateSyntaxError(message: "unterminated string (missing ')", column: 9, format: "name == 'open")) {
                try FetchPredicate(format: "name == 'open")
            }
        }
    }

    @Test func theTokenCacheIsBounded() throws {
        let cache = TokenCache()
        let tokens = try PredicateLexer.tokens("a == 1")
        for index in 0..<(TokenCache.capacity + 10) { cache.keep(tokens, of: "a == \(index)") }
        #expect(cache.count <= TokenCache.capacity)
        #expect(cache.tokens(of: "a == \(TokenCache.capacity + 9)") == tokens)
        // A format longer than the longest kept is lexed each time, and parses all the same.
        let long = Array(repeating: "a == 1", count: TokenCache.longestFormat / 6 + 1).joined(separator: " OR ")
        #expect(throws: Never.self) { try FetchPredicate(format: long) }
    }

    @Test func argumentsOfTheWrongKindAreErrors() throws {
        #expect(throws: PredicateSyntaxError.self) { try FetchPredicate(format: "%K == 1", 42) }
        #expect(throws: PredicateSyntaxError.self) { try FetchPredicate(format: "%K == 1", "name; DROP TABLE x") }
        #expect(throws: PredicateSyntaxError.self) { try FetchPredicate(format: "age == %d", "ten") }
        // An argument the format does not use is ignored, as NSPredicate does.
        #expect(try FetchPredicate(format: "age == 1", 5).node == comparison("age", .equal, .integer(1)))
    }

    @Test func deepNestingIsRefusedQuickly() {
        let deep = String(repeating: "(", count: 200) + "a == 1" + String(repeating: ")", count: 200)
        #expect(throws: PredicateSyntaxError.self) { try FetchPredicate(format: deep) }
        let nested = String(repeating: "(", count: 40) + "a" + String(repeating: " + 1)", count: 40) + " > 3"
        #expect((try? FetchPredicate(format: nested)) != nil)
    }

    /// 100,000 generated format strings: each parses or throws a syntax error, never crashes.
    @Test func fuzzedFormatsNeverCrash() {
        let fragments = ["a", "b.c", "items.@count", "tags.@sum.w", " ", "==", "=", "!=", "<", ">=", "=>", "AND", "OR", "NOT",
                         "&&", "||", "!", "(", ")", "{", "}", ",", "'x'", "\"y", "'", "1", "-2.5", "1e3", "0x1F", "%@", "%K",
                         "%d", "%f", "%", "$V", "$", "@", "@count", ".", "[c]", "[cd]", "[", "]", "IN", "BETWEEN", "CONTAINS",
                         "LIKE", "MATCHES", "BEGINSWITH", "ANY", "ALL", "NONE", "SUBQUERY(", "$i.x", "nil", "YES", "TRUEPREDICATE",
                         "+", "*", "/", "#", "é", "\\", "\n"]
        var generator = SplitMix64(seed: 0x5EED)
        var parsed = 0
        for _ in 0..<100_000 {
            let length = Int(generator.next() % 9) + 1
            var format = ""
            for _ in 0..<length { format += fragments[Int(generator.next() % UInt64(fragments.count))] + " " }
            if (try? FetchPredicate(format: format)) != nil { parsed += 1 }
        }
        #expect(parsed > 0)
    }
}
