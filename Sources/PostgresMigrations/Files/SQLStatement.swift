/// One statement of a migration, with where it starts in its file.
public struct SQLStatement: Sendable, Equatable {
    /// The statement's text without the final `;` and without the comments before it.
    public var text: String
    /// 1-based line in the file where the statement starts.
    public var line: Int
    /// The tokens of the statement, comments excluded.
    var tokens: [SQLToken]
    /// The comments right before the statement (lint directives live there).
    var leadingComments: [String]

    /// The first words of the statement, lowercased (`["create", "index", "concurrently"]`).
    var words: [String] { tokens.compactMap(\.word) }

    /// Splits SQL text into statements at every `;` that is not inside a string, a quoted
    /// identifier, a comment, a dollar-quoted body or a `BEGIN ATOMIC … END` function body.
    /// `firstLine` is the line of the text's first character in its file.
    static func split(_ text: String, firstLine: Int = 1) throws(SQLLexerError) -> [SQLStatement] {
        let all: [SQLToken]
        do {
            all = try SQLLexer.tokens(of: text)
        } catch {
            throw SQLLexerError(message: error.message, line: error.line + firstLine - 1)
        }
        let bytes = Array(text.utf8)
        var statements: [SQLStatement] = []
        var current: [SQLToken] = []
        var comments: [String] = []
        var atomicDepth = 0
        func finish() {
            defer {
                current = []
                comments = []
            }
            guard let first = current.first, let last = current.last else { return }
            statements.append(SQLStatement(
                text: String(decoding: bytes[first.range.lowerBound..<last.range.upperBound], as: UTF8.self),
                line: first.line + firstLine - 1,
                tokens: current.filter { !$0.isComment },
                leadingComments: comments))
        }
        for token in all {
            if case .comment(let comment) = token.kind, current.isEmpty {
                comments.append(comment)
                continue
            }
            if case .symbol(";") = token.kind, atomicDepth == 0 {
                finish()
                continue
            }
            if let word = token.word {
                let previous = current.last(where: { !$0.isComment })?.word
                if word == "atomic", previous == "begin" {
                    atomicDepth += 1
                } else if atomicDepth > 0, word == "case" {
                    atomicDepth += 1
                } else if atomicDepth > 0, word == "end" {
                    atomicDepth -= 1
                }
            }
            current.append(token)
        }
        finish()
        return statements
    }
}
