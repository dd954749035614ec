import PostgresClient

extension PredicateLexer {
    /// The tokens of `format`, lexed once per format string while it stays among the recently
    /// used ones (``TokenCache``): a server parses the same few format strings with new
    /// arguments for every request, and lexing one (Unicode-aware, character by character)
    /// cost more than parsing its tokens. Tokens hold no argument, so every parse binds its
    /// own. A format that does not lex is not kept, and throws each time.
    static func cachedTokens(_ format: String) throws(PredicateSyntaxError) -> [Token] {
        guard format.utf8.count <= TokenCache.longestFormat else { return try tokens(format) }
        if let cached = TokenCache.shared.tokens(of: format) { return cached }
        let lexed = try tokens(format)
        TokenCache.shared.keep(lexed, of: format)
        return lexed
    }
}

/// The tokens of the format strings lexed lately, shared by every thread of the process.
///
/// Bounded: at most ``capacity`` formats of at most ``longestFormat`` bytes each (a format
/// built by interpolating values — which arguments should carry — would otherwise grow it
/// without end); when full, it starts again empty.
final class TokenCache: Sendable {
    static let shared = TokenCache()
    static let capacity = 512
    static let longestFormat = 2_048

    // `Locked` (a pthread mutex), not `Mutex`: the thread sanitizer cannot see a futex.
    private let entries = Locked<[String: [PredicateLexer.Token]]>([:])

    func tokens(of format: String) -> [PredicateLexer.Token]? {
        entries.withLock { $0[format] }
    }

    func keep(_ tokens: [PredicateLexer.Token], of format: String) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[format] = tokens
        }
    }

    /// How many formats are kept now.
    var count: Int { entries.withLock { $0.count } }
}
