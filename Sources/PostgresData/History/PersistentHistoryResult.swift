import Foundation

/// What a persistent history request returned.
///
/// Core Data equivalent: `NSPersistentHistoryResult`.
public struct PersistentHistoryResult: Sendable {
    /// The transactions fetched, oldest first (empty for a count or a deletion).
    public var transactions: [PersistentHistoryTransaction]
    /// How many transactions were fetched, counted or deleted.
    public var count: Int
    /// Where the next fetch starts: after every transaction returned (and after those a
    /// fetch filtered out by author). Nil for deletions.
    public var token: PersistentHistoryToken?
    /// The primary's WAL position when the history was read: a replica that has replayed it
    /// shows every change returned.
    var walPosition: WALPosition?
}
