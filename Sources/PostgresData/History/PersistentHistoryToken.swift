/// A position in the store's persistent history: every history transaction committed
/// "before" the token has been seen; fetching after it returns the others.
///
/// Core Data equivalent: `NSPersistentHistoryToken`. Keep the token of the last transaction
/// you processed (it is `Codable`, and ``description`` round-trips through
/// ``init(_:)``) and fetch after it next time, or hand it to
/// ``PersistentStoreCoordinator/StoreOptions/remoteChangesStartToken`` so a restarted
/// process catches up.
///
/// A token is a PostgreSQL snapshot (`pg_current_snapshot()`: the transactions that were
/// committed when it was taken), adjusted by transactions seen although the snapshot does
/// not show them and transactions not yet seen although it does. Commit order is not the
/// order in which transaction IDs or sequence values are handed out, so a position made of
/// a number would skip a transaction that committed late; a snapshot cannot.
public struct PersistentHistoryToken: Sendable, Hashable, Codable, LosslessStringConvertible {
    /// `xmin:xmax:xip,…` as PostgreSQL prints a `pg_snapshot`.
    let snapshot: String
    /// Transactions (`xid8`, as text) seen although the snapshot does not show them.
    let seen: [String]
    /// Transactions the snapshot shows that are not seen yet.
    let unseen: [String]

    init(snapshot: String, seen: [String] = [], unseen: [String] = []) {
        self.snapshot = snapshot
        self.seen = seen
        self.unseen = unseen
    }

    /// The token a ``description`` printed, or nil when `description` is not one.
    public init?(_ description: String) {
        var snapshot = ""
        var seen: [String] = []
        var unseen: [String] = []
        var current = ""
        var sign: Character = " "
        func flush() -> Bool {
            switch sign {
            case " ": snapshot = current
            case "+": seen.append(current)
            default: unseen.append(current)
            }
            return sign == " " || (!current.isEmpty && current.allSatisfy(\.isNumber))
        }
        for character in description {
            guard character == "+" || character == "-" else {
                current.append(character)
                continue
            }
            guard flush() else { return nil }
            sign = character
            current = ""
        }
        guard flush(), Self.isSnapshot(snapshot) else { return nil }
        self.init(snapshot: snapshot, seen: seen, unseen: unseen)
    }

    /// The token as text: the snapshot, then `+xid` for each transaction seen beyond it and
    /// `-xid` for each it shows that is not seen yet.
    public var description: String {
        snapshot + seen.map { "+" + $0 }.joined() + unseen.map { "-" + $0 }.joined()
    }

    private static func isSnapshot(_ text: String) -> Bool {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 3, !fields[0].isEmpty, !fields[1].isEmpty,
              fields[0].allSatisfy(\.isNumber), fields[1].allSatisfy(\.isNumber) else { return false }
        return fields[2].allSatisfy { $0.isNumber || $0 == "," }
    }

    /// Decodes a token from its text form.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let token = PersistentHistoryToken(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a persistent history token: \(text)"))
        }
        self = token
    }

    /// Encodes the token as its text form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
