import PostgresClient

extension SQLStatement {
    /// What a `CREATE INDEX CONCURRENTLY` or `REINDEX … CONCURRENTLY` statement builds: the
    /// index it names (quoted and qualified as written, nil when PostgreSQL picks the name)
    /// and the table (nil for a `REINDEX`). Nil for other statements.
    struct ConcurrentIndex: Equatable {
        var index: String?
        var table: String?
        var isReindex: Bool
    }

    var concurrentIndex: ConcurrentIndex? {
        let tokens = self.tokens
        var position = 0
        func word(_ expected: String) -> Bool {
            guard position < tokens.count, tokens[position].word == expected else { return false }
            position += 1
            return true
        }
        /// A name possibly qualified (`a.b`), quoted for SQL; nil when there is none here.
        func qualifiedName() -> String? {
            var parts: [String] = []
            while position < tokens.count, let name = tokens[position].name {
                if parts.isEmpty, ["on", "only"].contains(tokens[position].word) { break }
                parts.append(quoteIdentifier(name))
                position += 1
                guard position < tokens.count, tokens[position].kind == .symbol(".") else { break }
                position += 1
            }
            return parts.isEmpty ? nil : parts.joined(separator: ".")
        }
        if word("create") {
            _ = word("unique")
            guard word("index"), word("concurrently") else { return nil }
            if word("if") { guard word("not"), word("exists") else { return nil } }
            let index = qualifiedName()
            guard word("on") else { return nil }
            _ = word("only")
            return ConcurrentIndex(index: index, table: qualifiedName(), isReindex: false)
        }
        if word("reindex") {
            if position < tokens.count, tokens[position].kind == .symbol("(") {
                while position < tokens.count, tokens[position].kind != .symbol(")") { position += 1 }
                position += 1
            }
            guard word("index"), word("concurrently") else { return nil }
            return ConcurrentIndex(index: qualifiedName(), table: nil, isReindex: true)
        }
        return nil
    }
}
