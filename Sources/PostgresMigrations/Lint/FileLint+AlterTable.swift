extension FileLint {
    /// One action of an `ALTER TABLE` on an existing table.
    mutating func checkAlterAction(_ action: [SQLToken], state: inout LintState) {
        let words = action.map { $0.word ?? "" }
        func has(_ sequence: String...) -> Bool { Self.contains(sequence, in: words) }
        let column = "\"" + (action.dropFirst(["add", "alter", "drop"].contains(words.first ?? "") ? 1 : 0)
            .first { $0.name != nil && !["column", "if", "not", "exists", "constraint"].contains($0.word ?? "") }?.name ?? "?") + "\""
        let second = words.dropFirst().first ?? ""
        switch words.first {
        case "add" where ["constraint", "foreign", "check", "primary", "unique", "exclude"].contains(second):
            recordNotNullCheck(words, tokens: action, state: &state)
            let name = second == "constraint" ? action.dropFirst(2).first?.name : nil
            if has("foreign", "key") || has("check") {
                if has("not", "valid") {
                    if let name { addedNotValid.insert(name) }
                } else {
                    report("constraint-without-not-valid",
                           "adding a \(has("check") ? "CHECK" : "FOREIGN KEY") constraint to \(quoted) checks every row while holding a lock that blocks writes",
                           effect: "scans")
                }
            } else if has("exclude") {
                report("exclude-constraint", "adding an EXCLUDE constraint to \(quoted) builds its index and checks every row under an ACCESS EXCLUSIVE lock; it has no NOT VALID form",
                       effect: "scans")
            } else if (has("unique") || has("primary", "key")) && !has("using", "index") {
                report("unique-without-index", "adding a UNIQUE or PRIMARY KEY constraint to \(quoted) builds its index under an ACCESS EXCLUSIVE lock",
                       effect: "blocks reads and writes to")
            }
        case "add":
            checkAddColumn(words, has: has, column: column)
        case "alter":
            if has("type") && !has("set", "default") {
                report("column-type-change",
                       "changing the type of \(column) rewrites \(quoted) and its indexes under an ACCESS EXCLUSIVE lock (unless the types are binary-compatible, such as varchar(n) to text)",
                       effect: "rewrites")
            } else if has("set", "not", "null") {
                if !state.provenNotNull.contains("\(shape.tableKey ?? "").\(column.dropFirst().dropLast())") {
                    report("set-not-null", "SET NOT NULL on \(column) scans all of \(quoted) under an ACCESS EXCLUSIVE lock (no validated CHECK (\(column.dropFirst().dropLast()) IS NOT NULL) precedes it)",
                           effect: "scans")
                }
            } else if has("drop", "not", "null") {
                report("drop-not-null", "DROP NOT NULL on \(column): instances of the previous release still running may not expect NULL in it")
            }
        case "validate":
            if let name = action.dropFirst(2).first?.name {
                if let covered = state.notNullChecks[name] { state.provenNotNull.insert(covered) }
                if migration.isTransactional && addedNotValid.contains(name) {
                    report("validate-in-same-transaction",
                           "VALIDATE CONSTRAINT \"\(name)\" runs in the transaction that added it NOT VALID: the ADD's lock on \(quoted) is still held, so the scan blocks writes",
                           effect: "scans")
                }
            }
        case "drop":
            if second != "constraint" && !has("default") && !has("not", "null") && !has("identity") {
                report("drop-column", "DROP COLUMN \(column): instances of the previous release still running during the deploy may read or write it")
            }
        case "rename":
            if second == "to" {
                report("rename-table", "renaming \(quoted) breaks the instances of the previous release still running during the deploy")
            } else if !has("constraint") {
                report("rename-column", "renaming \(column) breaks the instances of the previous release still running during the deploy")
            }
        case "detach":
            if !has("concurrently") {
                report("detach-partition-without-concurrently", "DETACH PARTITION without CONCURRENTLY locks all of \(quoted) against reads and writes")
            }
        case "set" where has("logged") || has("unlogged") || has("tablespace"):
            report("table-rewrite", "SET \(has("tablespace") ? "TABLESPACE" : has("unlogged") ? "UNLOGGED" : "LOGGED") rewrites \(quoted) under an ACCESS EXCLUSIVE lock",
                   effect: "rewrites")
        default:
            break
        }
    }

    private mutating func checkAddColumn(_ words: [String], has: (String...) -> Bool, column: String) {
        if !migration.isTransactional && !has("if", "not", "exists") {
            report("missing-if-not-exists", "ADD COLUMN \(column) without IF NOT EXISTS fails when a resumed run meets the column it already added")
        }
        if has("not", "null") && !has("default") && !has("generated") {
            report("add-column-not-null-without-default", "ADD COLUMN \(column) NOT NULL without a DEFAULT fails as soon as \(quoted) has a row")
        }
        let volatile = ["random", "clock_timestamp", "gen_random_uuid", "uuid_generate_v4", "timeofday", "nextval"]
        if has("stored") || (has("default") && words.contains(where: volatile.contains)) {
            report("add-column-rewrite", "ADD COLUMN \(column) with a volatile default or a stored generated expression rewrites \(quoted) under an ACCESS EXCLUSIVE lock",
                   effect: "rewrites")
        }
        if words.contains(where: { ["serial", "bigserial", "smallserial", "serial2", "serial4", "serial8"].contains($0) }) {
            report("add-column-serial", "ADD COLUMN \(column) of a serial type fills every row of \(quoted) from a sequence: a rewrite under an ACCESS EXCLUSIVE lock",
                   effect: "rewrites")
        }
        if has("generated") && has("identity") {
            report("add-column-identity", "ADD COLUMN \(column) GENERATED AS IDENTITY fills every row of \(quoted): a rewrite under an ACCESS EXCLUSIVE lock",
                   effect: "rewrites")
        }
        if has("unique") || has("primary", "key") {
            report("add-column-unique", "ADD COLUMN \(column) \(has("unique") ? "UNIQUE" : "PRIMARY KEY") builds an index on \(quoted) under an ACCESS EXCLUSIVE lock",
                   effect: "blocks reads and writes to")
        }
        if has("references") {
            report("add-column-references", "ADD COLUMN \(column) REFERENCES takes a lock on \(quoted) and on the referenced table that blocks writes to both")
        }
    }

    /// Remembers `CHECK (column IS NOT NULL)` constraints (validated at once unless NOT VALID).
    mutating func recordNotNullCheck(_ words: [String], tokens: [SQLToken], state: inout LintState) {
        guard let check = words.firstIndex(of: "check"), check + 5 < words.count,
              words[check + 3] == "is", words[check + 4] == "not", words[check + 5] == "null",
              let column = tokens[check + 2].name, let table = shape.tableKey else { return }
        let covered = "\(table).\(column)"
        if words.contains("valid") && words.contains("not") && words.last == "valid" {
            if words.dropFirst().first == "constraint", let name = tokens[2].name { state.notNullChecks[name] = covered }
        } else {
            state.provenNotNull.insert(covered)
        }
    }
}
