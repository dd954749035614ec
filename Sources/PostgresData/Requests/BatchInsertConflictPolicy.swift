import Foundation
import PostgresClient

/// What a batch insert does with a row that breaks a uniqueness constraint.
public enum BatchInsertConflictPolicy: Sendable, Hashable {
    /// The whole insert fails with an error naming the constraint (the default).
    case error
    /// The row is skipped (`ON CONFLICT DO NOTHING`).
    case ignore
    /// The existing row gets the values of **only the keys the row supplies**
    /// (`ON CONFLICT (keys) DO UPDATE SET` of those keys); `conflictKeys` name the uniqueness
    /// constraint (by default the entity's first one).
    case update(conflictKeys: [String]? = nil)
}
