import Foundation

/// MATCHES patterns as Core Data reads them — ICU regular expressions that must match the
/// whole string — and their PostgreSQL form (an ARE with the same meaning).
///
/// ICU and PostgreSQL's AREs share most syntax; what differs is rewritten: options at the
/// pattern's start (`(?i)`, `(?s)`, `(?m)`, `(?x)`) become the ARE's embedded options, with
/// ICU's default newline rules (`.` stops at a newline, `^`/`$` only at the ends: ARE mode
/// `p`); `\b`/`\B` (word boundaries) become `\y`/`\Y`; `\z` becomes `\Z`; `\Q…\E` becomes
/// escaped literal text. ICU constructs an ARE lacks (options in the middle, atomic groups,
/// named groups, possessive quantifiers) are refused with a clear error instead of a
/// different meaning.
enum RegularExpressionDialect {
    /// `pattern` compiled as the in-memory evaluator runs it: ICU, anchored to the whole
    /// string. Throws ``PostgresDataError/invalidRequest(_:)`` when ICU refuses it.
    static func icu(_ pattern: String, caseInsensitive: Bool) throws -> NSRegularExpression {
        do {
            return try NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z", options: caseInsensitive ? [.caseInsensitive] : [])
        } catch {
            throw PostgresDataError.invalidRequest("MATCHES needs a regular expression, and \"\(pattern)\" is not one (ICU syntax, as in Core Data): \(error.localizedDescription)")
        }
    }

    /// The ARE that matches what `pattern` matches in ICU, anchored to the whole string.
    static func postgres(_ pattern: String, caseInsensitive: Bool) throws -> String {
        _ = try icu(pattern, caseInsensitive: caseInsensitive)
        let scalars = Array(pattern.unicodeScalars)
        var position = 0
        var flags: Set<Unicode.Scalar> = caseInsensitive ? ["i"] : []
        // Leading option groups: `(?ix)`, `(?s-m)`.
        while position + 2 < scalars.count, scalars[position] == "(", scalars[position + 1] == "?",
              let close = scalars[(position + 2)...].firstIndex(of: ")"),
              scalars[(position + 2)..<close].allSatisfy({ "imsxw-".unicodeScalars.contains($0) }), close > position + 2 {
            var on = true
            for flag in scalars[(position + 2)..<close] {
                if flag == "-" { on = false } else if on { flags.insert(flag) } else { flags.remove(flag) }
            }
            position = close + 1
        }
        var body = ""
        var inBracket = false
        while position < scalars.count {
            let scalar = scalars[position]
            if scalar == "\\", position + 1 < scalars.count {
                let next = scalars[position + 1]
                position += 2
                if next == "Q" {
                    // Literal text up to \E: every character escaped.
                    while position < scalars.count, !(scalars[position] == "\\" && position + 1 < scalars.count && scalars[position + 1] == "E") {
                        let literal = scalars[position]
                        if literal.properties.isAlphabetic || literal.properties.numericType != nil || literal == " " {
                            body.unicodeScalars.append(literal)
                        } else {
                            body += "\\" + String(literal)
                        }
                        position += 1
                    }
                    position += 2
                    continue
                }
                switch next {
                case "b" where !inBracket: body += "\\y"
                case "B" where !inBracket: body += "\\Y"
                case "z", "Z": body += "\\Z"
                default: body += "\\" + String(next)
                }
                continue
            }
            if inBracket {
                if scalar == "]" { inBracket = false }
            } else if scalar == "[" {
                inBracket = true
                body.unicodeScalars.append(scalar)
                // A `]` first in the set (or after `^`) is a member, not its end.
                if position + 1 < scalars.count, scalars[position + 1] == "^" {
                    body.unicodeScalars.append("^")
                    position += 1
                }
                if position + 1 < scalars.count, scalars[position + 1] == "]" {
                    body.unicodeScalars.append("]")
                    position += 1
                }
                position += 1
                continue
            } else if scalar == "(", position + 2 < scalars.count, scalars[position + 1] == "?" {
                let kind = scalars[position + 2]
                let lookbehind = kind == "<" && position + 3 < scalars.count && (scalars[position + 3] == "=" || scalars[position + 3] == "!")
                if !(kind == ":" || kind == "=" || kind == "!" || kind == "#" || lookbehind) {
                    throw unsupported(pattern, "the group \"(?\(kind)…\" (options inside the pattern, atomic or named groups)", "put options at the pattern's start, e.g. (?i)…, and use plain groups")
                }
            } else if "*+?}".unicodeScalars.contains(scalar), position + 1 < scalars.count, scalars[position + 1] == "+" {
                throw unsupported(pattern, "the possessive quantifier \"\(scalar)+\"", "use the greedy form \"\(scalar)\"")
            }
            body.unicodeScalars.append(scalar)
            position += 1
        }
        var options = ""
        if flags.contains("i") { options += "i" }
        if flags.contains("x") { options += "x" }
        switch (flags.contains("s"), flags.contains("m")) {
        case (false, false): options += "p"
        case (false, true): options += "n"
        case (true, true): options += "w"
        case (true, false): break
        }
        return (options.isEmpty ? "" : "(?\(options))") + "\\A(?:" + body + ")\\Z"
    }

    private static func unsupported(_ pattern: String, _ what: String, _ fix: String) -> PostgresDataError {
        .invalidRequest("MATCHES \"\(pattern)\": \(what) has no PostgreSQL equivalent; \(fix)")
    }
}
