/// Splits a predicate format string into tokens, each with its 1-based column.
struct PredicateLexer {
    enum Kind: Equatable {
        case identifier(String)
        case number(String)
        case string(String)
        case variable(String)
        case at(String)
        case argument(Character)
        case symbol(String)
        case end
    }

    struct Token: Equatable {
        var kind: Kind
        var column: Int
    }

    static func tokens(_ format: String) throws(PredicateSyntaxError) -> [Token] {
        let characters = Array(format)
        var tokens: [Token] = []
        var index = 0
        func fail(_ message: String, at position: Int) -> PredicateSyntaxError {
            PredicateSyntaxError(message: message, column: position + 1, format: format)
        }
        while index < characters.count {
            let character = characters[index]
            let start = index
            if character.isWhitespace {
                index += 1
                continue
            }
            if character.isLetter || character == "_" || character == "#" {
                if character == "#" { index += 1 }  // `#key` escapes a reserved word.
                let nameStart = index
                while index < characters.count, characters[index].isLetter || characters[index].isNumber || characters[index] == "_" {
                    index += 1
                }
                guard index > nameStart else { throw fail("expected a name after '#'", at: start) }
                tokens.append(Token(kind: .identifier(String(characters[nameStart..<index])), column: start + 1))
                continue
            }
            if character.isNumber {
                while index < characters.count, characters[index].isNumber || characters[index] == "." || characters[index] == "_" {
                    // A dot followed by a letter ends the number (a key path like `1.@count` is not one).
                    if characters[index] == ".", index + 1 < characters.count, !characters[index + 1].isNumber { break }
                    index += 1
                }
                if index < characters.count, characters[index] == "e" || characters[index] == "E" {
                    var exponent = index + 1
                    if exponent < characters.count, characters[exponent] == "+" || characters[exponent] == "-" { exponent += 1 }
                    if exponent < characters.count, characters[exponent].isNumber {
                        index = exponent
                        while index < characters.count, characters[index].isNumber { index += 1 }
                    }
                }
                tokens.append(Token(kind: .number(String(characters[start..<index]).replacingOccurrences(of: "_", with: "")),
                                    column: start + 1))
                continue
            }
            switch character {
            case "'", "\"":
                index += 1
                var value = ""
                var closed = false
                while index < characters.count {
                    let next = characters[index]
                    if next == character {
                        closed = true
                        index += 1
                        break
                    }
                    if next == "\\" && index + 1 < characters.count {
                        let escaped = characters[index + 1]
                        switch escaped {
                        case "n": value.append("\n")
                        case "t": value.append("\t")
                        case "r": value.append("\r")
                        case "0": value.append("\0")
                        default: value.append(escaped)
                        }
                        index += 2
                        continue
                    }
                    value.append(next)
                    index += 1
                }
                guard closed else { throw fail("unterminated string (missing \(character))", at: start) }
                tokens.append(Token(kind: .string(value), column: start + 1))
            case "$":
                index += 1
                let nameStart = index
                while index < characters.count, characters[index].isLetter || characters[index].isNumber || characters[index] == "_" {
                    index += 1
                }
                guard index > nameStart else { throw fail("expected a variable name after '$'", at: start) }
                tokens.append(Token(kind: .variable(String(characters[nameStart..<index])), column: start + 1))
            case "@":
                index += 1
                let nameStart = index
                while index < characters.count, characters[index].isLetter { index += 1 }
                guard index > nameStart else { throw fail("expected count, sum, avg, min or max after '@'", at: start) }
                tokens.append(Token(kind: .at(String(characters[nameStart..<index]).lowercased()), column: start + 1))
            case "%":
                index += 1
                // %@, %K, %d, %i, %f, also with l / ll length modifiers (%ld, %lf, %lld).
                while index < characters.count, characters[index] == "l" || characters[index] == "q" { index += 1 }
                guard index < characters.count, "@KdifuDUFg".contains(characters[index]) else {
                    throw fail("unknown format specifier; use %@, %K, %d or %f", at: start)
                }
                let specifier: Character = switch characters[index] {
                case "@": "@"
                case "K": "K"
                case "f", "F", "g": "f"
                default: "d"
                }
                index += 1
                tokens.append(Token(kind: .argument(specifier), column: start + 1))
            default:
                let two = index + 1 < characters.count ? String(characters[index...index + 1]) : ""
                if ["==", "!=", "<>", "<=", ">=", "=<", "=>", "&&", "||", "**"].contains(two) {
                    let normalised = ["<>": "!=", "=<": "<=", "=>": ">="][two] ?? two
                    tokens.append(Token(kind: .symbol(normalised), column: start + 1))
                    index += 2
                } else if "=<>!+-*/(){},.[]".contains(character) {
                    tokens.append(Token(kind: .symbol(character == "=" ? "==" : String(character)), column: start + 1))
                    index += 1
                } else {
                    throw fail("unexpected character '\(character)'", at: start)
                }
            }
        }
        tokens.append(Token(kind: .end, column: characters.count + 1))
        return tokens
    }
}
