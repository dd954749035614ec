import Foundation

/// Parses Core Data's predicate format language into a ``PredicateNode``.
///
/// Grammar (keywords are case-insensitive):
/// ```
/// predicate   := or
/// or          := and (("OR" | "||") and)*
/// and         := not (("AND" | "&&") not)*
/// not         := ("NOT" | "!") not | "(" predicate ")" | "TRUEPREDICATE" | "FALSEPREDICATE" | comparison
/// comparison  := ["ANY" | "SOME" | "ALL" | "NONE"] value operator ["[c]" | "[d]" | "[cd]"] value
/// operator    := == = != <> < <= =< > >= => IN CONTAINS BEGINSWITH ENDSWITH LIKE MATCHES BETWEEN
/// value       := term (("+" | "-") term)*;   term := power (("*" | "/") power)*;   power := factor ("**" power)?
/// factor      := "-" factor | number | string | NIL | NULL | YES | NO | TRUE | FALSE | %@ | %K | %d | %f
///              | $VARIABLE["." keypath] | keypath | "{" value ("," value)* "}" | "(" value ")"
///              | SUBQUERY "(" keypath "," $var "," predicate ")" | NOW "(" ")"
/// keypath     := name ("." name)* ["." "@count" | "." ("@sum"|"@avg"|"@min"|"@max") "." keypath]
/// ```
struct PredicateParser {
    typealias Token = PredicateLexer.Token

    private let format: String
    private let tokens: [Token]
    private var position = 0
    private var arguments: [Any?]
    private var argumentIndex = 0
    /// Parentheses open around the current token; bounded so that no input costs more than
    /// a few passes over it.
    private var depth = 0
    private static let maximumDepth = 64

    init(format: String, arguments: [Any?]) throws(PredicateSyntaxError) {
        self.format = format
        self.tokens = try PredicateLexer.cachedTokens(format)
        self.arguments = arguments
    }

    mutating func parse() throws(PredicateSyntaxError) -> PredicateNode {
        let node = try parseOr()
        try expectEnd("expected AND, OR or the end of the predicate")
        return node
    }

    /// Everything was read.
    private func expectEnd(_ expectation: String) throws(PredicateSyntaxError) {
        guard case .end = current.kind else { throw error("\(expectation), found \(describe(current))") }
        // Arguments beyond those the format uses are ignored, as NSPredicate ignores them.
    }

    /// Parses a value expression alone (`weight + 1`, `now()`, `name + ' (old)'`), as batch
    /// updates take them.
    mutating func parseExpression() throws(PredicateSyntaxError) -> PredicateValue {
        let value = try parseValue()
        try expectEnd("expected an operator or the end of the expression")
        return value
    }

    // MARK: Tokens

    private var current: Token { tokens[min(position, tokens.count - 1)] }

    private func error(_ message: String, at token: Token? = nil) -> PredicateSyntaxError {
        PredicateSyntaxError(message: message, column: (token ?? current).column, format: format)
    }

    private func describe(_ token: Token) -> String {
        switch token.kind {
        case .identifier(let name): "'\(name)'"
        case .number(let text): text
        case .string(let text): "'\(text)'"
        case .variable(let name): "$\(name)"
        case .at(let name): "@\(name)"
        case .argument(let specifier): "%\(specifier)"
        case .symbol(let symbol): "'\(symbol)'"
        case .end: "the end"
        }
    }

    private func isKeyword(_ keyword: String, _ token: Token? = nil) -> Bool {
        if case .identifier(let name) = (token ?? current).kind { return name.uppercased() == keyword }
        return false
    }

    private func isSymbol(_ symbol: String) -> Bool {
        if case .symbol(let found) = current.kind { return found == symbol }
        return false
    }

    private mutating func accept(keyword: String) -> Bool {
        guard isKeyword(keyword) else { return false }
        position += 1
        return true
    }

    private mutating func accept(symbol: String) -> Bool {
        guard isSymbol(symbol) else { return false }
        position += 1
        return true
    }

    private mutating func expect(symbol: String, _ context: String) throws(PredicateSyntaxError) {
        guard accept(symbol: symbol) else { throw error("expected '\(symbol)' \(context), found \(describe(current))") }
    }

    private static let reserved: Set<String> = [
        "AND", "OR", "NOT", "ANY", "SOME", "ALL", "NONE", "IN", "CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE",
        "MATCHES", "BETWEEN", "TRUEPREDICATE", "FALSEPREDICATE", "NIL", "NULL", "YES", "NO", "TRUE", "FALSE", "SUBQUERY",
    ]

    // MARK: Predicates

    private mutating func parseOr() throws(PredicateSyntaxError) -> PredicateNode {
        var terms = [try parseAnd()]
        while accept(keyword: "OR") || accept(symbol: "||") { terms.append(try parseAnd()) }
        return terms.count == 1 ? terms[0] : .or(terms)
    }

    private mutating func parseAnd() throws(PredicateSyntaxError) -> PredicateNode {
        var terms = [try parseNot()]
        while accept(keyword: "AND") || accept(symbol: "&&") { terms.append(try parseNot()) }
        return terms.count == 1 ? terms[0] : .and(terms)
    }

    /// Counts one more level of a construct that recurses (so that a hostile input throws
    /// instead of exhausting the stack); the caller lowers `depth` when the level ends.
    private mutating func enterNesting(_ construct: String) throws(PredicateSyntaxError) {
        guard depth < Self.maximumDepth else { throw error("\(construct) nested deeper than \(Self.maximumDepth) levels") }
        depth += 1
    }

    private mutating func parseNot() throws(PredicateSyntaxError) -> PredicateNode {
        if accept(keyword: "NOT") || accept(symbol: "!") {
            try enterNesting("NOT")
            defer { depth -= 1 }
            return .not(try parseNot())
        }
        if accept(keyword: "TRUEPREDICATE") { return .constant(true) }
        if accept(keyword: "FALSEPREDICATE") { return .constant(false) }
        if isSymbol("(") {
            // A parenthesised predicate, or a parenthesised value starting a comparison
            // (`(a + b) > 3`): try the first, fall back to the second, and report the error
            // of whichever got further.
            let open = current
            guard depth < Self.maximumDepth else { throw error("parentheses nested deeper than \(Self.maximumDepth) levels") }
            var attempt = self
            attempt.position += 1
            attempt.depth += 1
            var pending: PredicateSyntaxError
            do {
                let inner = try attempt.parseOr()
                if attempt.accept(symbol: ")") {
                    if !attempt.startsOperator {
                        attempt.depth -= 1
                        self = attempt
                        return inner
                    }
                    pending = attempt.error("expected AND, OR or ')'")
                } else {
                    pending = attempt.error("expected ')' to close the '(' at column \(open.column), found \(attempt.describe(attempt.current))")
                }
            } catch {
                pending = error
            }
            do {
                return try parseComparison()
            } catch {
                throw error.column >= pending.column ? error : pending
            }
        }
        return try parseComparison()
    }

    private var startsOperator: Bool {
        if case .symbol(let symbol) = current.kind { return ["==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "**"].contains(symbol) }
        return ["IN", "CONTAINS", "BEGINSWITH", "ENDSWITH", "LIKE", "MATCHES", "BETWEEN"].contains { isKeyword($0) }
    }

    private mutating func parseComparison() throws(PredicateSyntaxError) -> PredicateNode {
        var quantifier = PredicateComparison.Quantifier.direct
        if accept(keyword: "ANY") || accept(keyword: "SOME") { quantifier = .any }
        else if accept(keyword: "ALL") { quantifier = .all }
        else if accept(keyword: "NONE") { quantifier = .none }
        guard !isEnd else { throw error("expected a predicate, found the end") }
        let leftToken = current
        let left = try parseValue()
        guard let op = parseOperator() else {
            throw error("expected a comparison operator (==, !=, <, <=, >, >=, IN, CONTAINS, BEGINSWITH, ENDSWITH, LIKE, MATCHES, BETWEEN) after \(describe(leftToken)), found \(describe(current))")
        }
        var caseInsensitive = false
        var diacriticInsensitive = false
        if accept(symbol: "[") {
            guard case .identifier(let options) = current.kind, options.lowercased().allSatisfy({ "cdn".contains($0) }) else {
                throw error("expected c, d or cd inside '[ ]' after \(op.rawValue), found \(describe(current))")
            }
            caseInsensitive = options.lowercased().contains("c")
            diacriticInsensitive = options.lowercased().contains("d")
            position += 1
            try expect(symbol: "]", "to close the options")
        }
        guard !isEnd, !isSymbol(")") else {
            throw error("expected a value after '\(op.rawValue)'", at: current)
        }
        let right = try parseValue()
        return .comparison(PredicateComparison(quantifier: quantifier, left: left, op: op, caseInsensitive: caseInsensitive,
                                               diacriticInsensitive: diacriticInsensitive, right: right))
    }

    private var isEnd: Bool {
        if case .end = current.kind { return true }
        return false
    }

    private mutating func parseOperator() -> PredicateComparison.Operator? {
        if case .symbol(let symbol) = current.kind, let op = PredicateComparison.Operator(rawValue: symbol) {
            position += 1
            return op
        }
        for op in [PredicateComparison.Operator.in, .contains, .beginsWith, .endsWith, .like, .matches, .between]
        where accept(keyword: op.rawValue) {
            return op
        }
        return nil
    }

    // MARK: Values

    private mutating func parseValue() throws(PredicateSyntaxError) -> PredicateValue {
        var value = try parseTerm()
        while true {
            if accept(symbol: "+") { value = .arithmetic(.add, value, try parseTerm()) }
            else if accept(symbol: "-") { value = .arithmetic(.subtract, value, try parseTerm()) }
            else { return value }
        }
    }

    private mutating func parseTerm() throws(PredicateSyntaxError) -> PredicateValue {
        var value = try parsePower()
        while true {
            if accept(symbol: "*") { value = .arithmetic(.multiply, value, try parsePower()) }
            else if accept(symbol: "/") { value = .arithmetic(.divide, value, try parsePower()) }
            else { return value }
        }
    }

    /// `a ** b ** c` is `a ** (b ** c)`, binding tighter than `*` and `/`.
    private mutating func parsePower() throws(PredicateSyntaxError) -> PredicateValue {
        let base = try parseFactor()
        guard accept(symbol: "**") else { return base }
        try enterNesting("'**'")
        let exponent = try parsePower()
        depth -= 1
        return .arithmetic(.power, base, exponent)
    }

    private mutating func parseFactor() throws(PredicateSyntaxError) -> PredicateValue {
        let token = current
        switch token.kind {
        case .symbol("-"):
            position += 1
            try enterNesting("'-'")
            let operand = try parseFactor()
            depth -= 1
            if case .constant(.integer(let value)) = operand { return .constant(.integer(-value)) }
            if case .constant(.double(let value)) = operand { return .constant(.double(-value)) }
            return .negated(operand)
        case .symbol("("):
            guard depth < Self.maximumDepth else { throw error("parentheses nested deeper than \(Self.maximumDepth) levels") }
            position += 1
            depth += 1
            let inner = try parseValue()
            try expect(symbol: ")", "to close '('")
            depth -= 1
            return inner
        case .symbol("{"):
            position += 1
            try enterNesting("lists")
            var elements: [PredicateValue] = []
            if !accept(symbol: "}") {
                repeat { elements.append(try parseValue()) } while accept(symbol: ",")
                try expect(symbol: "}", "to close the list")
            }
            depth -= 1
            return .list(elements)
        case .number(let text):
            position += 1
            if let integer = Int64(text) { return .constant(.integer(integer)) }
            if text.hasPrefix("0x"), let integer = Int64(text.dropFirst(2), radix: 16) { return .constant(.integer(integer)) }
            guard let double = Double(text) else { throw error("'\(text)' is not a number", at: token) }
            return .constant(.double(double))
        case .string(let text):
            position += 1
            return .constant(.string(text))
        case .variable(let name):
            position += 1
            if isSymbol(".") {
                return try parseKeyPath(startingWith: "$" + name, at: token)
            }
            return .variable(name)
        case .argument(let specifier):
            position += 1
            return try argument(specifier, at: token)
        case .identifier(let name):
            switch name.uppercased() {
            case "NIL", "NULL":
                position += 1
                return .constant(.null)
            case "YES", "TRUE":
                position += 1
                return .constant(.boolean(true))
            case "NO", "FALSE":
                position += 1
                return .constant(.boolean(false))
            case "SUBQUERY":
                position += 1
                return try parseSubquery(at: token)
            case "CAST" where position + 1 < tokens.count && tokens[position + 1].kind == .symbol("("):
                let (value, name) = try parseValueAndQuotedName("CAST", at: token, example: "CAST(value, 'NSDate')")
                try expect(symbol: ")", "to close CAST(")
                let types: [String: AttributeType] = ["NSDate": .date, "NSNumber": .double, "NSString": .string, "NSDecimalNumber": .decimal]
                guard let type = types[name] else {
                    throw error("CAST to \(name) has no meaning here; cast to NSDate, NSNumber, NSString or NSDecimalNumber", at: token)
                }
                return .cast(value, type)
            case "FUNCTION" where position + 1 < tokens.count && tokens[position + 1].kind == .symbol("("):
                let (value, selector) = try parseValueAndQuotedName("FUNCTION", at: token, example: "FUNCTION(name, 'uppercaseString')")
                let known = PredicateValue.Method.allCases.map(\.rawValue).joined(separator: ", ")
                guard let method = PredicateValue.Method(selector: selector) else {
                    throw error("FUNCTION(…, '\(selector)') has no meaning in SQL; the methods that do are \(known) (compute others in Swift after fetching, or store them as a derived attribute)", at: token)
                }
                guard case .symbol(")") = current.kind else {
                    throw error("FUNCTION(…, '\(selector)') takes no arguments", at: current)
                }
                position += 1
                return .function(value, method)
            default:
                if name.lowercased() == "now", case .symbol("(") = tokens[min(position + 1, tokens.count - 1)].kind {
                    position += 2
                    try expect(symbol: ")", "after now(")
                    return .now
                }
                if Self.reserved.contains(name.uppercased()) {
                    throw error("expected a value, found the keyword \(name.uppercased()) (escape a key of that name as #\(name))", at: token)
                }
                position += 1
                return try parseKeyPath(startingWith: name, at: token)
            }
        case .end:
            throw error("expected a value, found the end")
        default:
            throw error("expected a value, found \(describe(token))", at: token)
        }
    }

    private mutating func parseKeyPath(startingWith first: String, at token: Token) throws(PredicateSyntaxError) -> PredicateValue {
        var components = [first]
        while accept(symbol: ".") {
            switch current.kind {
            case .identifier(let name):
                position += 1
                components.append(name)
            case .at(let function):
                let functionToken = current
                position += 1
                if function == "count" { return .count(components) }
                guard let aggregate = PredicateValue.Aggregate(rawValue: function) else {
                    throw error("unknown key-path function @\(function); use @count, @sum, @avg, @min or @max", at: functionToken)
                }
                try expect(symbol: ".", "after @\(function) (as in items.@\(function).weight)")
                guard case .identifier(let key) = current.kind else {
                    throw error("expected a key after @\(function).", at: current)
                }
                position += 1
                var keyPath = [key]
                while accept(symbol: ".") {
                    guard case .identifier(let next) = current.kind else { throw error("expected a key after '.'") }
                    position += 1
                    keyPath.append(next)
                }
                return .aggregate(aggregate, collection: components, key: keyPath)
            default:
                throw error("expected a key after '.', found \(describe(current))")
            }
        }
        return .keyPath(components)
    }

    /// `KEYWORD(value, 'name'`: the value and the quoted name after it (the caller reads on).
    private mutating func parseValueAndQuotedName(_ keyword: String, at token: Token, example: String) throws(PredicateSyntaxError) -> (PredicateValue, String) {
        position += 2
        try enterNesting(keyword)
        let value = try parseValue()
        depth -= 1
        try expect(symbol: ",", "after \(keyword)'s first argument")
        guard case .constant(.string(let name)) = try parseFactor() else {
            throw error("\(keyword) takes a name in quotes: \(example)", at: token)
        }
        return (value, name)
    }

    private mutating func parseSubquery(at token: Token) throws(PredicateSyntaxError) -> PredicateValue {
        try enterNesting("SUBQUERY")
        defer { depth -= 1 }
        try expect(symbol: "(", "after SUBQUERY")
        guard case .identifier(let first) = current.kind else {
            throw error("expected the collection key path of SUBQUERY, found \(describe(current))")
        }
        position += 1
        guard case .keyPath(let collection) = try parseKeyPath(startingWith: first, at: token) else {
            throw error("expected a to-many key path as SUBQUERY's collection", at: token)
        }
        try expect(symbol: ",", "after SUBQUERY's collection")
        guard case .variable(let variable) = current.kind else {
            throw error("expected a $variable as SUBQUERY's second argument, found \(describe(current))")
        }
        position += 1
        try expect(symbol: ",", "after SUBQUERY's variable")
        let predicate = try parseOr()
        try expect(symbol: ")", "to close SUBQUERY")
        if accept(symbol: ".") {
            guard case .at("count") = current.kind else { throw error("expected @count after SUBQUERY(…).") }
            position += 1
        }
        return .subquery(collection: collection, variable: variable, predicate: predicate)
    }

    // MARK: Arguments

    private mutating func argument(_ specifier: Character, at token: Token) throws(PredicateSyntaxError) -> PredicateValue {
        guard argumentIndex < arguments.count else {
            throw error("the format uses more arguments than the \(arguments.count) given", at: token)
        }
        let value = arguments[argumentIndex]
        argumentIndex += 1
        switch specifier {
        case "K":
            guard let key = value as? String, !key.isEmpty else {
                throw error("%K needs a key path string, got \(value.map { "\(type(of: $0))" } ?? "nil")", at: token)
            }
            let parts = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } }) else {
                throw error("%K argument \"\(key)\" is not a key path", at: token)
            }
            return .keyPath(parts)
        case "d":
            guard let integer = AttributeValue.integer(value) else {
                throw error("%d needs an integer, got \(value.map { "\(type(of: $0))" } ?? "nil")", at: token)
            }
            return .constant(.integer(integer))
        case "f":
            if let double = value as? Double { return .constant(.double(double)) }
            if let float = value as? Float { return .constant(.double(Double(float))) }
            if let integer = AttributeValue.integer(value) { return .constant(.double(Double(integer))) }
            throw error("%f needs a number, got \(value.map { "\(type(of: $0))" } ?? "nil")", at: token)
        default:
            guard let converted = Self.value(value) else {
                throw error("%@ argument of type \(value.map { "\(type(of: $0))" } ?? "nil") cannot be compared in a predicate", at: token)
            }
            return converted
        }
    }

    /// A `%@` argument as a predicate value: a constant, or a list for arrays and sets.
    static func value(_ value: Any?) -> PredicateValue? {
        guard let value else { return .constant(.null) }
        if let integer = AttributeValue.integer(value) { return .constant(.integer(integer)) }
        switch value {
        case let value as AttributeValue: return .constant(value)
        case let value as Double: return .constant(.double(value))
        case let value as Float: return .constant(.float(value))
        case let value as Decimal: return .constant(.decimal(value))
        case let value as String: return .constant(.string(value))
        case let value as Bool: return .constant(.boolean(value))
        case let value as Date: return .constant(.date(value))
        case let value as Data: return .constant(.data(value))
        case let value as UUID: return .constant(.uuid(value))
        case let value as URL: return .constant(.url(value))
        case let value as ManagedObjectID: return .constant(.object(value))
        case let value as ManagedObject: return .constant(.object(value.objectID))
        case let values as [Any?]:
            var elements: [PredicateValue] = []
            for element in values {
                guard let converted = Self.value(element) else { return nil }
                elements.append(converted)
            }
            return .list(elements)
        case let values as any Collection:
            var elements: [Any?] = []
            for element in values as any Collection { elements.append(element as Any?) }
            return Self.value(elements)
        default:
            return nil
        }
    }
}
