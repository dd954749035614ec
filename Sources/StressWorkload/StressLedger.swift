import PostgresClient

/// What the successful saves of stress workers wrote, to compare with the database.
///
/// A worker records a change only after its save committed; a save that failed for good
/// records nothing. At the end the database must hold exactly the merged ledgers: every card
/// recorded with its title, revision, board and labels, no other card, every counter at the
/// sum of its recorded increments, and no join row without both its ends.
public struct StressLedger: Codable, Sendable, Equatable {
    /// A card as its last successful save left it.
    public struct CardState: Codable, Sendable, Equatable {
        public var title: String
        public var revision: Int64
        public var board: String
        public var labels: [String]
    }

    /// The cards that exist, by token.
    public var cards: [String: CardState] = [:]
    /// Increments of each counter.
    public var increments: [String: Int64] = [:]
    /// Operations tried, committed, and failed for good (an error after every retry).
    public var attempted = 0
    public var succeeded = 0
    public var failedCleanly = 0
    /// Runs of a block beyond the first (serialization failures, conflicts, lost connections).
    public var retries = 0
    /// A few of the errors that ended operations for good.
    public var finalErrors: [String] = []

    /// An empty ledger.
    public init() {}

    /// Both ledgers' effects (tokens never overlap: each worker names its own cards).
    public func merged(with other: StressLedger) -> StressLedger {
        var result = self
        result.cards.merge(other.cards) { first, _ in first }
        result.increments.merge(other.increments, uniquingKeysWith: +)
        result.attempted += other.attempted
        result.succeeded += other.succeeded
        result.failedCleanly += other.failedCleanly
        result.retries += other.retries
        result.finalErrors += other.finalErrors
        return result
    }

    /// The differences between this ledger and the database (empty when they agree).
    public func differences(on connection: Connection) async throws -> [String] {
        var problems: [String] = []
        let rows = try await connection.query("""
            SELECT c.token, c.title, c.revision, b.name,
                   coalesce((SELECT string_agg(l.name, ',' ORDER BY l.name) FROM stress_card_labels j
                             JOIN stress_label l ON l.id = j.stress_label_id WHERE j.stress_card_id = c.id), '')
            FROM stress_card c LEFT JOIN stress_board b ON b.id = c.board_id
            """)
        var stored: [String: CardState] = [:]
        for row in rows {
            let (token, title, revision, board, labels) = try row.decode((String, String, Int64, String?, String).self)
            stored[token] = CardState(title: title, revision: revision, board: board ?? "(none)",
                                      labels: labels.isEmpty ? [] : labels.split(separator: ",").map(String.init))
        }
        for (token, expected) in cards where stored[token] != expected {
            problems.append("card \(token): the ledger says \(expected), the database \(stored[token].map { "\($0)" } ?? "nothing")")
        }
        for token in stored.keys where cards[token] == nil {
            problems.append("card \(token) is in the database but in no successful save")
        }
        for row in try await connection.query("SELECT name, value FROM stress_counter") {
            let (name, value) = try row.decode((String, Int64).self)
            if value != increments[name, default: 0] {
                problems.append("counter \(name) is \(value), the ledger counts \(increments[name, default: 0]) increments")
            }
        }
        let orphans = try await connection.query("""
            SELECT count(*) FROM stress_card_labels j
            WHERE NOT EXISTS (SELECT FROM stress_card c WHERE c.id = j.stress_card_id)
               OR NOT EXISTS (SELECT FROM stress_label l WHERE l.id = j.stress_label_id)
            """)[0].decode(Int64.self, at: 0)
        if orphans > 0 { problems.append("\(orphans) join rows lack a card or a label") }
        return problems
    }
}
