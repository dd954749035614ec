import Foundation

/// Reads or deletes the store's persistent history.
///
/// Core Data equivalent: `NSPersistentHistoryChangeRequest`. Run it with
/// `context.execute(request)` (async, or blocking inside `perform`) on a store loaded with
/// ``PersistentStoreCoordinator/StoreOptions/persistentHistoryTracking``.
///
/// ```swift
/// let result = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: lastToken))
/// for transaction in result.transactions where transaction.author != "importer" {
///     await context.perform { context.mergeChanges(fromContextDidSave: transaction.objectIDNotification()) }
/// }
/// lastToken = result.token ?? lastToken
/// ```
public struct PersistentHistoryChangeRequest: Sendable {
    /// What the request does.
    public enum Operation: Sendable, Hashable {
        /// Transactions the token has not seen (all history when nil).
        case fetchAfterToken(PersistentHistoryToken?)
        /// Transactions written after a date.
        case fetchAfterDate(Date)
        /// Deletes the transactions the token has seen.
        case deleteBeforeToken(PersistentHistoryToken)
        /// Deletes the transactions written before a date.
        case deleteBeforeDate(Date)
    }

    /// What a fetch returns.
    ///
    /// Core Data equivalent: `NSPersistentHistoryResultType`.
    public enum ResultType: Sendable, Hashable {
        /// Transactions with their changes.
        case transactionsAndChanges
        /// Transactions without their changes (their `changes` are empty).
        case transactionsOnly
        /// Only how many transactions match.
        case count
    }

    /// What the request does.
    public var operation: Operation
    /// What a fetch returns; ``ResultType/transactionsAndChanges`` by default.
    public var resultType: ResultType = .transactionsAndChanges
    /// The most transactions a fetch returns (the oldest first); the result's token then
    /// stops after the last one returned.
    public var fetchLimit: Int?
    /// Only transactions whose author is in this set (nil: every author).
    public var authors: Set<String>?
    /// Leaves out transactions whose author is in this set, such as your own importer's.
    public var excludedAuthors: Set<String> = []

    /// The transactions `token` has not seen, oldest first; every transaction when nil.
    ///
    /// Core Data equivalent: `fetchHistory(after:)` with a token.
    public static func fetchHistory(after token: PersistentHistoryToken?) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(operation: .fetchAfterToken(token))
    }

    /// The transactions written after `date`, oldest first.
    ///
    /// Core Data equivalent: `fetchHistory(after:)` with a date.
    public static func fetchHistory(after date: Date) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(operation: .fetchAfterDate(date))
    }

    /// The transactions after `transaction`.
    ///
    /// Core Data equivalent: `fetchHistory(after:)` with a transaction.
    public static func fetchHistory(after transaction: PersistentHistoryTransaction) -> PersistentHistoryChangeRequest {
        fetchHistory(after: transaction.token)
    }

    /// Deletes the history `token` has seen: purge what every reader has processed.
    ///
    /// Core Data equivalent: `deleteHistory(before:)` with a token.
    public static func deleteHistory(before token: PersistentHistoryToken) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(operation: .deleteBeforeToken(token))
    }

    /// Deletes the history written before `date`.
    ///
    /// Core Data equivalent: `deleteHistory(before:)` with a date.
    public static func deleteHistory(before date: Date) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(operation: .deleteBeforeDate(date))
    }
}
