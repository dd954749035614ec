import CLibPQ
import Foundation

/// The notifications a connection receives, as an `AsyncSequence`.
///
/// ```swift
/// let listener = try await Connection.connect(url: url)   // a dedicated connection
/// try await listener.listen(on: "items_changed")
/// for try await notification in listener.notifications() { print(notification.payload) }
/// ```
///
/// Waiting does not occupy the connection: other statements (`LISTEN` on more channels,
/// queries) can run on it meanwhile. The sequence ends with an error when the connection
/// is lost, and ends when the task is cancelled.
public struct NotificationSequence: AsyncSequence, Sendable {
    public typealias Element = PostgresNotification
    let connection: Connection

    public func makeAsyncIterator() -> Iterator { Iterator(connection: connection) }

    public struct Iterator: AsyncIteratorProtocol {
        let connection: Connection
        public mutating func next() async throws -> PostgresNotification? {
            try await connection.nextNotification()
        }
    }
}
