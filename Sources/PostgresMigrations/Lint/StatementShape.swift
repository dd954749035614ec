/// The parts of a DDL statement the linter reasons about: what it does, to which table,
/// and, for `ALTER TABLE`, each action separately.
struct StatementShape {
    enum Kind: Equatable {
        case createTable
        case createIndex(concurrently: Bool)
        case alterTable
        case dropTable
        case other
    }

    var kind: Kind
    /// The table, lowercased unless quoted, without its schema.
    var table: String?
    /// The table's schema when the statement names one.
    var schema: String?
    /// For `ALTER TABLE`: each comma-separated action's tokens.
    var actions: [[SQLToken]] = []

    init(_ statement: SQLStatement) {
        let tokens = statement.tokens
        let words = tokens.map { $0.word ?? "" }
        func word(_ index: Int) -> String { index < words.count ? words[index] : "" }
        var cursor = 0
        func skip(_ expected: String...) {
            for word in expected where cursor < words.count && words[cursor] == word { cursor += 1 }
        }
        var schema: String?
        /// Reads a possibly schema-qualified name at `cursor`; returns its last part and
        /// keeps the part before it in `schema`.
        func name() -> String? {
            guard cursor < tokens.count, var last = tokens[cursor].name else { return nil }
            cursor += 1
            while cursor + 1 < tokens.count, tokens[cursor].kind == .symbol("."), let next = tokens[cursor + 1].name {
                schema = last
                last = next
                cursor += 2
            }
            return last
        }
        switch (word(0), word(1)) {
        case ("create", "table"), ("create", "unlogged"), ("create", "temporary"), ("create", "temp"):
            kind = .createTable
            cursor = 1
            skip("unlogged", "temporary", "temp", "table", "if", "not", "exists")
            table = name()
        case ("create", "index"), ("create", "unique"):
            cursor = 1
            skip("unique", "index")
            let concurrently = word(cursor) == "concurrently"
            kind = .createIndex(concurrently: concurrently)
            if let on = words[cursor...].firstIndex(of: "on") {
                cursor = on + 1
                skip("only")
                table = name()
            }
        case ("alter", "table"):
            kind = .alterTable
            cursor = 2
            skip("if", "exists", "only")
            table = name()
            if cursor < tokens.count, tokens[cursor].kind == .symbol("*") { cursor += 1 }
            var depth = 0
            var current: [SQLToken] = []
            for token in tokens[min(cursor, tokens.count)...] {
                switch token.kind {
                case .symbol("("): depth += 1
                case .symbol(")"): depth -= 1
                case .symbol(",") where depth == 0:
                    actions.append(current)
                    current = []
                    continue
                default: break
                }
                current.append(token)
            }
            if !current.isEmpty { actions.append(current) }
        case ("drop", "table"):
            kind = .dropTable
            cursor = 2
            skip("if", "exists")
            table = name()
        default:
            kind = .other
        }
        self.schema = schema
    }

    /// The key of the table in ``MigrationLinter/tableSizes``: `schema.table` when the
    /// statement qualifies it, else the bare name (as the search path finds it).
    var tableKey: String? {
        table.map { table in schema.map { "\($0).\(table)" } ?? table }
    }
}
