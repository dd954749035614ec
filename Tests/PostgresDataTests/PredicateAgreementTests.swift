import Foundation
import PostgresData
import PostgresDataTesting
import Testing

@Entity final class Sample: ManagedObject {
    var label: String?
    var title: String?
    var count: Int?
    var score: Double?
    var flag: Bool?
    var group: SampleGroup?
}

@Entity final class SampleGroup: ManagedObject {
    var name: String?
    @Relationship(inverse: \Sample.group) var samples: Set<Sample>
}

/// The same predicate evaluated by PostgreSQL and in memory selects the same objects:
/// random predicates over random rows with NULLs, case, diacritics and empty strings.
@Suite struct PredicateAgreementTests {
    static let strings: [String?] = [
        nil, "", " ", "a", "A", "abc", "ABC", "Ábc", "ábc", "café", "CAFÉ", "cafe", "Cafe", "naïve", "NAIVE",
        "ß", "Ünïcode", "unicode", "x%y", "x_y", "a*b", "Zoë", "zoe", "ñandú", "Ñ", "e\u{301}", "Œuvre", "ø",
        "a\nb", "line1\nline2", "word boundary", "x.y", "abc\n", "😀x",
    ]
    static let patterns = ["", "*", "a*", "*É", "caf?", "?", "*a*b*", "x%*", "x_y", "C*", "*e", "ñ*",
                           "a\\*b", "*\\**", "x\\?y", "\\\\*"]
    // ICU patterns, as Core Data reads them: options at the start, newline rules, \b, \Q…\E.
    static let expressions = ["", ".*", "a.*", "[a-c]+", ".*é.*", "CAF.", "[[:alpha:]]+", "x.y", "(a|b)c?",
                              "a.b", "(?s)a.b", "(?m)line1$\\s^line2", "(?sm)^line2$.*", "(?i)CAFÉ", "\\bword\\b.*",
                              ".*\\bboundary", "\\Qx.y\\E", "(?x) a b c ", "line\\d\\nline\\d", "abc$", "[^\\n]+"]
    static let integers: [Int?] = [nil, -5, 0, 1, 7, 42, 100]
    static let doubles: [Double?] = [nil, -1.5, 0, 0.5, 3.25, 100]

    let model = ManagedObjectModel(Sample.self, SampleGroup.self)

    @Test func sqlAndMemoryAgreeOnRandomPredicates() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_agree")
        let container = PersistentContainer(name: "Agree", model: model)
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        try await container.performBackgroundTask { context in
            var random = SplitMix64(seed: 0xA9EE)
            let groups = ["g1", "G2", nil].map { name in
                let group = SampleGroup(context: context)
                group.name = name
                return group
            }
            for _ in 0..<80 {
                let sample = Sample(context: context)
                sample.label = Self.strings.randomElement(using: &random)!
                sample.title = Self.strings.randomElement(using: &random)!
                sample.count = Self.integers.randomElement(using: &random)!
                sample.score = Self.doubles.randomElement(using: &random)!
                sample.flag = [nil, true, false].randomElement(using: &random)!
                sample.group = random.next() % 4 == 0 ? nil : groups.randomElement(using: &random)!
            }
            try context.save()
        }
        let (checked, matchedSome) = try await container.performBackgroundTask { context in
            let samples = try context.fetch(FetchRequest<Sample>(entityName: "Sample"))
            let groups = try context.fetch(FetchRequest<SampleGroup>(entityName: "SampleGroup"))
            var random = SplitMix64(seed: 0x5A3E)
            var checked = 0
            var matchedSome = 0
            for round in 0..<1_500 {
                let onGroups = round % 5 == 0
                let (format, arguments) = onGroups ? Self.groupPredicate(&random) : Self.samplePredicate(&random, depth: 0)
                let predicate = try FetchPredicate(format: format, argumentArray: arguments)
                let objects: [ManagedObject] = onGroups ? groups : samples
                var request = FetchRequest<ManagedObjectID>(entityName: onGroups ? "SampleGroup" : "Sample", predicate: predicate)
                request.includesPendingChanges = false
                let fromSQL = Set(try context.fetch(request))
                let inMemory = Set(try objects.filter { try predicate.evaluate(with: $0) }.map(\.objectID))
                #expect(fromSQL == inMemory, "\(format) \(arguments)")
                if fromSQL != inMemory { break }
                checked += 1
                if !fromSQL.isEmpty && fromSQL.count < objects.count { matchedSome += 1 }
            }
            // Every MATCHES pattern with every option, beyond the random draw.
            for expression in Self.expressions {
                for flags in ["", "[c]", "[d]", "[cd]"] {
                    let predicate = try FetchPredicate(format: "label MATCHES\(flags) %@", expression)
                    var request = FetchRequest<ManagedObjectID>(entityName: "Sample", predicate: predicate)
                    request.includesPendingChanges = false
                    let fromSQL = Set(try context.fetch(request))
                    let inMemory = Set(try samples.filter { try predicate.evaluate(with: $0) }.map(\.objectID))
                    #expect(fromSQL == inMemory, "label MATCHES\(flags) \(expression)")
                }
            }
            return (checked, matchedSome)
        }
        #expect(checked == 1_500)
        // Most predicates split the rows; a generator that only made trivial ones would prove nothing.
        #expect(matchedSome > 600)
    }

    static func samplePredicate(_ random: inout SplitMix64, depth: Int) -> (String, [Any?]) {
        let choice = random.next() % (depth < 3 ? 12 : 9)
        let flags = ["", "[c]", "[d]", "[cd]"].randomElement(using: &random)!
        let stringKey = ["label", "title", "group.name"].randomElement(using: &random)!
        switch choice {
        case 0, 1:
            let op = ["==", "!=", "<", "<=", ">", ">="].randomElement(using: &random)!
            return ("\(stringKey) \(op)\(op == "==" || op == "!=" ? flags : "") %@", [strings.randomElement(using: &random)!])
        case 2:
            let op = ["BEGINSWITH", "ENDSWITH", "CONTAINS"].randomElement(using: &random)!
            return ("\(stringKey) \(op)\(flags) %@", [strings.randomElement(using: &random)!])
        case 3:
            if random.next() % 2 == 0 {
                return ("\(stringKey) LIKE\(flags) %@", [patterns.randomElement(using: &random)!])
            }
            return ("\(stringKey) MATCHES\(flags) %@", [expressions.randomElement(using: &random)!])
        case 4:
            let values = (0..<(random.next() % 4)).map { _ in strings.randomElement(using: &random)! }
            return ("\(stringKey) IN\(flags) %@", [values])
        case 5:
            let op = ["==", "!=", "<", ">=", "==[c]", "!=[cd]"].randomElement(using: &random)!
            return ("label \(op) title", [])
        case 6:
            let key = ["count", "score"].randomElement(using: &random)!
            let op = ["==", "!=", "<", "<=", ">", ">="].randomElement(using: &random)!
            // An integer attribute against a fractional constant, on either side, compares as numbers.
            let value: Any? = key == "count" && random.next() % 2 == 0 ? integers.randomElement(using: &random)! : doubles.randomElement(using: &random)!
            return random.next() % 3 == 0 ? ("%@ \(op) \(key)", [value]) : ("\(key) \(op) %@", [value])
        case 7:
            let forms = ["count BETWEEN {0, 42}", "score BETWEEN {-1, 1}", "count IN {1, 7, nil}", "count + 1 > 7",
                         "count * 2 == count + count", "score * 2 >= count", "-count < 0", "count == score",
                         "flag == YES", "flag == NO", "flag == nil", "flag != YES", "group == nil", "group != nil",
                         "group.name ==[c] 'G1'", "count != nil AND score == nil", "count / 7 == 1",
                         "count < 2.5", "7.5 > count", "label IN 'abc café'", "title IN[cd] 'ABC CAFE'", "label IN ''",
                         "7 IN[c] {20, 7, 18}", "count IN[c] {20, 7, 18}", "count ** 2 > 40", "2 ** count < 100",
                         "score ** 2 >= 1 AND count * 2 ** 2 > 3", "CAST(count, 'NSString') == '7'",
                         "CAST(score, 'NSDate') > CAST(0, 'NSDate')", "CAST(CAST(score, 'NSDate'), 'NSNumber') == score",
                         "CAST('1.5', 'NSNumber') < score", "CAST(score, 'NSString') == '100'",
                         "FUNCTION(label, 'uppercaseString') == 'ABC'", "FUNCTION(title, 'uppercaseString') BEGINSWITH 'CAF'",
                         "FUNCTION(label, 'uppercaseString') == FUNCTION(title, 'uppercaseString')",
                         "FUNCTION(label, 'lowercaseString') == 'cafe'", "FUNCTION(label, 'length') == 2",
                         "FUNCTION(title, 'length') > 4", "FUNCTION(count, 'stringValue') == '7'",
                         "FUNCTION(score, 'integerValue') == 3", "FUNCTION(score, 'intValue') < 0",
                         "FUNCTION(count, 'boolValue') == YES", "FUNCTION(score, 'doubleValue') > 1",
                         "FUNCTION(flag, 'integerValue') == 1"]
            return (forms.randomElement(using: &random)!, [])
        case 8:
            return (["TRUEPREDICATE", "FALSEPREDICATE"].randomElement(using: &random)!, [])
        case 9:
            let (inner, arguments) = samplePredicate(&random, depth: depth + 1)
            return ("NOT (\(inner))", arguments)
        default:
            let (left, leftArguments) = samplePredicate(&random, depth: depth + 1)
            let (right, rightArguments) = samplePredicate(&random, depth: depth + 1)
            let op = random.next() % 2 == 0 ? "AND" : "OR"
            return ("(\(left)) \(op) (\(right))", leftArguments + rightArguments)
        }
    }

    static func groupPredicate(_ random: inout SplitMix64) -> (String, [Any?]) {
        let flags = ["", "[c]", "[d]", "[cd]"].randomElement(using: &random)!
        switch random.next() % 8 {
        case 0: return ("ANY samples.label ==\(flags) %@", [strings.randomElement(using: &random)!])
        case 1: return ("NONE samples.title BEGINSWITH\(flags) %@", [strings.randomElement(using: &random)!])
        case 2: return ("ALL samples.count >= %@", [integers.randomElement(using: &random)!])
        case 3: return ("samples.@count > %d", [Int(random.next() % 40)])
        case 4: return ("samples.@sum.count > %d", [Int(random.next() % 600)])
        case 5: return ("samples.@avg.score < %f", [Double(random.next() % 40)])
        case 6: return ("samples.@max.label ==\(flags) %@", [strings.randomElement(using: &random)!])
        default: return ("SUBQUERY(samples, $s, $s.score > %@ AND $s.flag == YES).@count >= %d",
                         [doubles.randomElement(using: &random)!, Int(random.next() % 8)])
        }
    }
}
