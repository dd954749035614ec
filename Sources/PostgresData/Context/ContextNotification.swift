import Foundation
import PostgresClient

/// One notification of a context.
public enum ContextNotification: Sendable, Hashable {
    /// Objects changed (posted when the context processes pending changes: at the end of each
    /// `perform` block and before a save).
    case objectsDidChange(ContextObjectsDidChange)
    /// A save is about to validate and write.
    case willSave(contextName: String?)
    /// A save finished.
    case didSave(ContextDidSave)
}
