extension FileLint {
    /// The opt-in style rules, on the column types and names a statement writes.
    mutating func checkStyle() {
        let tokens = statement.tokens
        guard let first = tokens.first?.word, ["create", "alter"].contains(first) else { return }
        var reported: Set<String> = []
        func once(_ rule: String, _ message: String) {
            guard reported.insert(rule).inserted else { return }
            report(rule, message)
        }
        for (index, token) in tokens.enumerated() {
            if let name = token.name, name.utf8.count > 63 {
                once("identifier-too-long", "\"\(name.prefix(40))…\" is \(name.utf8.count) bytes: PostgreSQL keeps only the first 63")
            }
            // Types only in table definitions; a type after `::` is a cast, not a column's type.
            guard shape.kind == .createTable || shape.kind == .alterTable, let word = token.word, index == 0 || tokens[index - 1].kind != SQLToken.Kind.symbol(":") else { continue }
            let next = index + 1 < tokens.count ? tokens[index + 1] : nil
            switch word {
            case "varchar" where next?.kind == .symbol("("):
                once("prefer-text", "varchar(n) puts a length limit in the column type; text with a CHECK says the same and changes without a rewrite")
            case "varying" where index > 0 && tokens[index - 1].word == "character" && next?.kind == .symbol("("):
                once("prefer-text", "character varying(n) puts a length limit in the column type; text with a CHECK says the same and changes without a rewrite")
            case "timestamp" where !(next?.word == "with" || (next?.kind == .symbol("(") && index + 4 < tokens.count && tokens[index + 4].word == "with")):
                once("prefer-timestamptz", "timestamp without time zone does not say which instant it is")
            case "int", "integer", "int4", "smallint", "int2", "serial", "serial4", "smallserial", "serial2":
                once("prefer-bigint", "\(word) is 32 bits or less: a key or counter runs out at \(word.contains("small") || word.hasSuffix("2") ? "32,767" : "2,147,483,647")")
                if word.contains("serial") { once("prefer-identity", "\(word) makes a separate sequence; an identity column is part of its table") }
            case "bigserial", "serial8":
                once("prefer-identity", "\(word) makes a separate sequence; an identity column is part of its table")
            case "char", "character":
                if next?.word != "varying" {
                    once("no-char", "\(word)(n) pads values with spaces and is no faster than text")
                }
            default:
                break
            }
        }
    }
}
