import CLibPQ
import Foundation

/// A message sent with `NOTIFY channel, 'payload'` (or `pg_notify`).
public struct PostgresNotification: Sendable, Hashable {
    public var channel: String
    public var payload: String
    /// The server process that sent it.
    public var senderPID: Int32
}
