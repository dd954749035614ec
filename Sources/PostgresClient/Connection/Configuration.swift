import CLibPQ
import Foundation

/// Where and how to connect: a `postgres://` URL or libpq keywords, validated before any
/// connection attempt.
///
/// ```swift
/// let configuration = try Configuration(url: "postgres://app:secret@db.internal:5432/todo?sslmode=require")
/// let local = try Configuration(url: "postgresql:///todo?host=/var/run/postgresql")   // Unix socket
/// let keywords = try Configuration(keywords: ["host": "localhost", "dbname": "todo"])
/// ```
///
/// Every libpq connection keyword is accepted (`sslmode`, `sslrootcert`, `connect_timeout`,
/// `application_name`, `options`, `target_session_attrs`, …); an unknown one is an error
/// naming it. ``description`` and every error show the password as `***`.
public struct Configuration: Sendable, CustomStringConvertible {
    /// libpq keyword → value, exactly what is passed to `PQconnectdbParams`.
    public private(set) var parameters: [String: String]

    /// Statements that run longer are logged at `notice` with their text and duration
    /// (never their values); nil logs none. One second by default. Every statement is logged
    /// at `debug` (its text and the number of its bind parameters).
    public var slowStatementThreshold: Duration? = .seconds(1)

    /// Parses a `postgres://` or `postgresql://` URL:
    /// `postgres://[user[:password]@][host][:port][,host2[:port2]…][/database][?keyword=value&…]`.
    /// A host that starts with `/` (percent-encoded as `%2F`, or given as `?host=/dir`) is a Unix-socket directory.
    public init(url: String) throws {
        var parser = URLParser(url)
        parameters = try parser.parse()
        try Self.validate(parameters, source: "URL")
    }

    /// Uses libpq connection keywords (`host`, `port`, `user`, `password`, `dbname`, `sslmode`, …).
    public init(keywords: [String: String]) throws {
        parameters = keywords
        try Self.validate(parameters, source: "keywords")
    }

    /// Reads `DATABASE_URL` from the environment, or returns nil when it is unset or empty.
    public static func fromEnvironment(_ variable: String = "DATABASE_URL") throws -> Configuration? {
        guard let url = ProcessInfo.processInfo.environment[variable], !url.isEmpty else { return nil }
        return try Configuration(url: url)
    }

    public var host: String? {
        get { parameters["host"] }
        set { parameters["host"] = newValue }
    }
    public var port: Int? {
        get { parameters["port"].flatMap { Int($0) } }
        set { parameters["port"] = newValue.map(String.init) }
    }
    public var user: String? {
        get { parameters["user"] }
        set { parameters["user"] = newValue }
    }
    public var password: String? {
        get { parameters["password"] }
        set { parameters["password"] = newValue }
    }
    public var database: String? {
        get { parameters["dbname"] }
        set { parameters["dbname"] = newValue }
    }
    /// Sets any libpq keyword; the keyword is checked when the connection opens.
    public subscript(keyword: String) -> String? {
        get { parameters[keyword] }
        set { parameters[keyword] = newValue }
    }

    /// The configuration as a URL, with the password replaced by `***`.
    public var description: String { redactedURL }

    /// The configuration as a URL; with `redactingPassword`, the password reads `***`.
    public func url(redactingPassword: Bool = true) -> String {
        var text = "postgres://"
        if let user {
            text += Self.escape(user)
            if let password { text += ":" + (redactingPassword ? "***" : Self.escape(password)) }
            text += "@"
        }
        var query: [(String, String)] = []
        if let host, !host.hasPrefix("/") {
            text += host.contains(":") && !host.contains(",") ? "[\(host)]" : host
            if let port = parameters["port"] { text += ":\(port)" }
        } else {
            if let host { query.append(("host", host)) }
            if let port = parameters["port"] { query.append(("port", port)) }
        }
        text += "/" + (database.map(Self.escape) ?? "")
        for key in parameters.keys.sorted() where !["host", "port", "user", "password", "dbname"].contains(key) {
            query.append((key, parameters[key]!))
        }
        if !query.isEmpty {
            text += "?" + query.map { "\($0.0)=\(Self.escape($0.1))" }.joined(separator: "&")
        }
        return text
    }

    var redactedURL: String { url(redactingPassword: true) }

    /// The configuration as a libpq connection string (`host='…' dbname='…'`), for tools
    /// such as `psql` or code that calls libpq itself. It contains the password: never log it.
    public func connectionString() -> String {
        parameters.sorted { $0.key < $1.key }.map { key, value in
            "\(key)='\(value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'"))'"
        }.joined(separator: " ")
    }

    /// Removes the password from a message that might echo it (libpq's own messages do not,
    /// but a server's or a proxy's might).
    func redact(_ message: String) -> String {
        guard let password, password.count >= 3 else { return message }
        return message.replacingOccurrences(of: password, with: "***")
    }

    /// The keyword arrays for `PQconnectdbParams`, with this client's fixed settings added.
    func connectionKeywords() -> [(String, String)] {
        var keywords = parameters
        // Text is decoded as UTF-8 everywhere; the server converts for us.
        keywords["client_encoding"] = "UTF8"
        if keywords["application_name"] == nil && keywords["fallback_application_name"] == nil {
            keywords["fallback_application_name"] = "PostgresData"
        }
        // Bounded waits by default (each one the URL or the keywords may set otherwise): a
        // connect gives up after 10 s, and over TCP a silent peer is found by keepalives
        // (idle 10 s, then 3 probes 5 s apart) and unacknowledged data fails after 30 s.
        for (key, value) in Self.defaultTimeouts where keywords[key] == nil { keywords[key] = value }
        return keywords.sorted { $0.key < $1.key }
    }

    /// The libpq settings ``connectionKeywords()`` adds when they are not set: together they
    /// bound how long an operation waits for a server that stopped answering (≤ 30 s).
    /// `tcp_user_timeout` and the keepalives apply to TCP connections only (libpq ignores
    /// them on Unix sockets).
    static let defaultTimeouts: [(String, String)] = [
        ("connect_timeout", "10"),
        ("keepalives", "1"),
        ("keepalives_idle", "10"),
        ("keepalives_interval", "5"),
        ("keepalives_count", "3"),
        ("tcp_user_timeout", "30000"),
    ]

    private static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlUnreservedCharacters) ?? text
    }

    private static func validate(_ parameters: [String: String], source: String) throws {
        let known = LibPQKeywords.all
        for key in parameters.keys.sorted() where !known.contains(key) {
            let close = known.filter { $0.hasPrefix(String(key.prefix(3))) }.sorted()
            throw PostgresError(
                .invalidConfiguration,
                message: "unknown connection option \"\(key)\" in the \(source)",
                hint: close.isEmpty ? "See libpq's connection parameters for the supported keywords."
                    : "Did you mean \(close.map { "\"\($0)\"" }.joined(separator: " or "))?")
        }
        if let port = parameters["port"] {
            for part in port.split(separator: ",", omittingEmptySubsequences: false) {
                guard let value = Int(part), (1...65535).contains(value) else {
                    throw PostgresError(.invalidConfiguration,
                                        message: "invalid port \"\(part)\" in the \(source)",
                                        hint: "A port is a number from 1 to 65535.")
                }
            }
        }
    }
}

extension CharacterSet {
    fileprivate static let urlUnreservedCharacters = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}

/// The connection keywords this libpq knows, read once from `PQconndefaults()`.
enum LibPQKeywords {
    static let all: Set<String> = {
        var names: Set<String> = []
        guard let options = PQconndefaults() else { return names }
        defer { PQconninfoFree(options) }
        var cursor = options
        while let keyword = cursor.pointee.keyword {
            names.insert(String(cString: keyword))
            cursor += 1
        }
        return names
    }()
}

/// Parses libpq's URI syntax, reporting errors with their position and the password hidden.
private struct URLParser {
    let text: String
    let characters: [Character]
    private var index = 0

    init(_ text: String) {
        self.text = text
        self.characters = Array(text)
    }

    mutating func parse() throws -> [String: String] {
        var result: [String: String] = [:]
        guard let schemeEnd = text.range(of: "://") else {
            throw error("the URL must start with postgres:// or postgresql://", at: 0)
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw error("unsupported scheme \"\(scheme)\"; use postgres:// or postgresql://", at: 0)
        }
        index = text.distance(from: text.startIndex, to: schemeEnd.upperBound)

        // Authority: everything up to '/', '?' or the end; userinfo ends at the last '@'.
        let authorityStart = index
        while index < characters.count, characters[index] != "/", characters[index] != "?" { index += 1 }
        let authority = String(characters[authorityStart..<index])
        var hostPart = authority
        var hostOffset = authorityStart
        if let at = authority.lastIndex(of: "@") {
            let userInfo = String(authority[..<at])
            hostPart = String(authority[authority.index(after: at)...])
            hostOffset = authorityStart + userInfo.count + 1
            if let colon = userInfo.firstIndex(of: ":") {
                result["user"] = try decode(String(userInfo[..<colon]), at: authorityStart, what: "user name")
                result["password"] = try decode(String(userInfo[userInfo.index(after: colon)...]),
                                                at: authorityStart, what: "password", secret: true)
            } else if !userInfo.isEmpty {
                result["user"] = try decode(userInfo, at: authorityStart, what: "user name")
            }
        }
        try parseHosts(hostPart, offset: hostOffset, into: &result)

        if index < characters.count, characters[index] == "/" {
            index += 1
            let start = index
            while index < characters.count, characters[index] != "?" { index += 1 }
            let database = String(characters[start..<index])
            if !database.isEmpty { result["dbname"] = try decode(database, at: start, what: "database name") }
        }
        if index < characters.count, characters[index] == "?" {
            index += 1
            var offset = index
            for pair in String(characters[index...]).split(separator: "&", omittingEmptySubsequences: false) {
                defer { offset += pair.count + 1 }
                if pair.isEmpty { continue }
                guard let equals = pair.firstIndex(of: "=") else {
                    throw error("query parameter \"\(pair)\" has no value (expected keyword=value)", at: offset)
                }
                var key = try decode(String(pair[..<equals]), at: offset, what: "query keyword")
                var value = try decode(String(pair[pair.index(after: equals)...]), at: offset,
                                       what: "value of \(key)", secret: key == "password")
                if key == "ssl" {  // JDBC's spelling, which users paste from elsewhere.
                    key = "sslmode"
                    value = value == "true" ? "require" : "disable"
                }
                result[key] = value
            }
        }
        return result
    }

    private mutating func parseHosts(_ part: String, offset: Int, into result: inout [String: String]) throws {
        guard !part.isEmpty else { return }
        var hosts: [String] = []
        var ports: [String] = []
        var position = offset
        for spec in part.split(separator: ",", omittingEmptySubsequences: false) {
            defer { position += spec.count + 1 }
            var host = Substring(spec)
            var port: Substring?
            if host.hasPrefix("[") {
                guard let close = host.firstIndex(of: "]") else {
                    throw error("IPv6 address is missing its closing \"]\"", at: position)
                }
                let rest = host[host.index(after: close)...]
                host = host[host.index(after: host.startIndex)..<close]
                if rest.hasPrefix(":") { port = rest.dropFirst() } else if !rest.isEmpty {
                    throw error("unexpected \"\(rest)\" after the IPv6 address", at: position)
                }
            } else if let colon = host.lastIndex(of: ":") {
                port = host[host.index(after: colon)...]
                host = host[..<colon]
            }
            if let port {
                guard let number = Int(port), (1...65535).contains(number) else {
                    throw error("invalid port \"\(port)\" (a port is a number from 1 to 65535)",
                                at: position + host.count + 1)
                }
            }
            hosts.append(try decode(String(host), at: position, what: "host"))
            ports.append(port.map(String.init) ?? "")
        }
        if hosts.contains(where: { !$0.isEmpty }) { result["host"] = hosts.joined(separator: ",") }
        if ports.contains(where: { !$0.isEmpty }) { result["port"] = ports.joined(separator: ",") }
    }

    private func decode(_ raw: String, at position: Int, what: String, secret: Bool = false) throws -> String {
        guard let decoded = raw.removingPercentEncoding else {
            throw error("malformed percent-encoding in the \(what)\(secret ? "" : " \"\(raw)\"")", at: position)
        }
        return decoded
    }

    private func error(_ message: String, at position: Int) -> PostgresError {
        PostgresError(.invalidConfiguration,
                      message: "malformed connection URL at character \(position + 1): \(message)",
                      detail: "URL: \(redacted)",
                      hint: "Expected postgres://user:password@host:port/database?option=value")
    }

    /// The URL with the password masked, wherever it is (`user:…@`, `?password=…`), even
    /// if the URL is malformed.
    private var redacted: String {
        guard let schemeEnd = text.range(of: "://") else { return "(not shown)" }
        var result = text
        let rest = text[schemeEnd.upperBound...]
        if let at = rest.lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
            result = String(text[..<colon]) + ":***" + String(text[at...])
        }
        while let key = result.range(of: "password=", options: .caseInsensitive),
              !result[key.upperBound...].hasPrefix("***") {
            let end = result[key.upperBound...].firstIndex(of: "&") ?? result.endIndex
            result.replaceSubrange(key.upperBound..<end, with: "***")
        }
        return result
    }
}
