/// One token of a SQL text, as far as a migration tool needs to understand it: where
/// statements end, which words a statement starts with, and what is a literal.
struct SQLToken: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// A keyword or unquoted identifier, lowercased.
        case word(String)
        /// A `"quoted"` identifier, unescaped.
        case quotedIdentifier(String)
        /// A string constant (`'…'`, `E'…'`, `$tag$…$tag$`), its content.
        case string(String)
        case number(String)
        /// `--` or `/* */`, with its text.
        case comment(String)
        /// Any other character (operators, parentheses, `;`, `,`, `$1`).
        case symbol(String)
    }

    var kind: Kind
    /// Byte offsets of the token in the lexed text.
    var range: Range<Int>
    /// 1-based line of the token's first character.
    var line: Int

    var word: String? {
        if case .word(let word) = kind { return word }
        return nil
    }

    /// A word or a quoted identifier: a name as PostgreSQL folds it.
    var name: String? {
        switch kind {
        case .word(let word): word
        case .quotedIdentifier(let name): name
        default: nil
        }
    }

    var isComment: Bool {
        if case .comment = kind { return true }
        return false
    }
}

/// An unterminated quote, comment or dollar-quoted string.
struct SQLLexerError: Error, Sendable, Equatable {
    var message: String
    var line: Int
}

/// Splits SQL text into tokens, following PostgreSQL's lexical rules for everything that can
/// hide a `;`: string constants (with `''`, `E'\''` escapes), quoted identifiers, dollar
/// quoting with tags, nested block comments and line comments.
struct SQLLexer {
    private let bytes: [UInt8]
    private var position = 0
    private var line = 1

    init(_ text: String) {
        bytes = Array(text.utf8)
    }

    static func tokens(of text: String) throws(SQLLexerError) -> [SQLToken] {
        var lexer = SQLLexer(text)
        var tokens: [SQLToken] = []
        while let token = try lexer.next() { tokens.append(token) }
        return tokens
    }

    private mutating func next() throws(SQLLexerError) -> SQLToken? {
        while position < bytes.count, Self.isSpace(bytes[position]) {
            if bytes[position] == UInt8(ascii: "\n") { line += 1 }
            position += 1
        }
        guard position < bytes.count else { return nil }
        let start = position
        let startLine = line
        let byte = bytes[position]
        let kind: SQLToken.Kind
        switch byte {
        case UInt8(ascii: "-") where peek(1) == UInt8(ascii: "-"):
            while position < bytes.count, bytes[position] != UInt8(ascii: "\n") { position += 1 }
            kind = .comment(text(start, position))
        case UInt8(ascii: "/") where peek(1) == UInt8(ascii: "*"):
            try skipBlockComment(startLine: startLine)
            kind = .comment(text(start, position))
        case UInt8(ascii: "'"):
            kind = .string(try quoted(UInt8(ascii: "'"), backslashEscapes: false, startLine: startLine))
        case UInt8(ascii: "\""):
            kind = .quotedIdentifier(try quoted(UInt8(ascii: "\""), backslashEscapes: false, startLine: startLine))
        case _ where (byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")) && peek(1) == UInt8(ascii: "'"):
            position += 1
            kind = .string(try quoted(UInt8(ascii: "'"), backslashEscapes: true, startLine: startLine))
        case UInt8(ascii: "$"):
            if let tagEnd = dollarTagEnd() {
                kind = .string(try dollarQuoted(tagEnd: tagEnd, startLine: startLine))
            } else {
                position += 1
                while position < bytes.count, Self.isDigit(bytes[position]) { position += 1 }
                kind = .symbol(text(start, position))
            }
        case _ where Self.isIdentifierStart(byte):
            while position < bytes.count, Self.isIdentifierPart(bytes[position]) { position += 1 }
            kind = .word(text(start, position).lowercased())
        case _ where Self.isDigit(byte):
            while position < bytes.count, Self.isDigit(bytes[position]) || bytes[position] == UInt8(ascii: ".")
                    || bytes[position] == UInt8(ascii: "_") { position += 1 }
            kind = .number(text(start, position))
        default:
            position += 1
            kind = .symbol(text(start, position))
        }
        return SQLToken(kind: kind, range: start..<position, line: startLine)
    }

    private func peek(_ offset: Int) -> UInt8? {
        position + offset < bytes.count ? bytes[position + offset] : nil
    }

    private func text(_ start: Int, _ end: Int) -> String {
        String(decoding: bytes[start..<end], as: UTF8.self)
    }

    private mutating func skipBlockComment(startLine: Int) throws(SQLLexerError) {
        var depth = 0
        while position < bytes.count {
            if bytes[position] == UInt8(ascii: "/"), peek(1) == UInt8(ascii: "*") {
                depth += 1
                position += 2
            } else if bytes[position] == UInt8(ascii: "*"), peek(1) == UInt8(ascii: "/") {
                depth -= 1
                position += 2
                if depth == 0 { return }
            } else {
                if bytes[position] == UInt8(ascii: "\n") { line += 1 }
                position += 1
            }
        }
        throw SQLLexerError(message: "a /* comment is never closed", line: startLine)
    }

    /// Reads `'…'` or `"…"` from the opening quote; a doubled quote is one quote.
    private mutating func quoted(_ quote: UInt8, backslashEscapes: Bool, startLine: Int) throws(SQLLexerError) -> String {
        position += 1
        var content: [UInt8] = []
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\n") { line += 1 }
            if backslashEscapes, byte == UInt8(ascii: "\\"), position + 1 < bytes.count {
                content.append(bytes[position + 1])
                if bytes[position + 1] == UInt8(ascii: "\n") { line += 1 }
                position += 2
                continue
            }
            if byte == quote {
                if peek(1) == quote {
                    content.append(quote)
                    position += 2
                    continue
                }
                position += 1
                return String(decoding: content, as: UTF8.self)
            }
            content.append(byte)
            position += 1
        }
        let what = quote == UInt8(ascii: "'") ? "a string constant" : "a quoted identifier"
        throw SQLLexerError(message: "\(what) opened here is never closed", line: startLine)
    }

    /// The end of a `$tag$` opening at the current position, or nil when this `$` is not one
    /// (a parameter like `$1`).
    private func dollarTagEnd() -> Int? {
        var index = position + 1
        if index < bytes.count, bytes[index] == UInt8(ascii: "$") { return index + 1 }
        guard index < bytes.count, Self.isIdentifierStart(bytes[index]) else { return nil }
        while index < bytes.count, Self.isIdentifierPart(bytes[index]), bytes[index] != UInt8(ascii: "$") { index += 1 }
        return index < bytes.count && bytes[index] == UInt8(ascii: "$") ? index + 1 : nil
    }

    private mutating func dollarQuoted(tagEnd: Int, startLine: Int) throws(SQLLexerError) -> String {
        let tag = Array(bytes[position..<tagEnd])
        position = tagEnd
        let contentStart = position
        while position < bytes.count {
            if bytes[position] == UInt8(ascii: "$"), position + tag.count <= bytes.count,
               bytes[position..<position + tag.count].elementsEqual(tag) {
                let content = text(contentStart, position)
                position += tag.count
                return content
            }
            if bytes[position] == UInt8(ascii: "\n") { line += 1 }
            position += 1
        }
        throw SQLLexerError(message: "the dollar-quoted string \(String(decoding: tag, as: UTF8.self)) opened here is never closed",
                            line: startLine)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0C || byte == 0x0B
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private static func isIdentifierStart(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte >= 0x80
    }

    private static func isIdentifierPart(_ byte: UInt8) -> Bool {
        isIdentifierStart(byte) || isDigit(byte) || byte == UInt8(ascii: "$")
    }
}
