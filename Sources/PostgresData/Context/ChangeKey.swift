import Foundation
import PostgresClient

/// The keys of a change dictionary for ``ManagedObjectContext/mergeChanges(fromRemoteContextSave:into:)``.
public enum ChangeKey: String, Sendable, Hashable {
    /// Objects inserted elsewhere.
    case inserted
    /// Objects updated elsewhere: refreshed in the contexts.
    case updated
    /// Objects deleted elsewhere: removed from the contexts.
    case deleted
}
