import CLibPQ
import Foundation

/// One suspended `next()` waiting for the socket to become readable.
final class NotificationWaiter: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var continuation: CheckedContinuation<Void, Never>?
    private var source: DispatchSourceRead?
    private var resumed = false

    func arm(_ continuation: CheckedContinuation<Void, Never>, socket: Int32) {
        lock.lock()
        if resumed {
            lock.unlock()
            continuation.resume()
            return
        }
        // Created only when it will be resumed: libdispatch traps on releasing a suspended source.
        let source = DispatchSource.makeReadSource(fileDescriptor: socket, queue: CancelHandle.queue)
        source.setEventHandler { [self] in resume() }
        self.continuation = continuation
        self.source = source
        lock.unlock()
        source.resume()
    }

    func resume() {
        lock.lock()
        resumed = true
        let continuation = self.continuation
        let source = self.source
        self.continuation = nil
        self.source = nil
        lock.unlock()
        source?.cancel()
        continuation?.resume()
    }
}

extension Connection {
    /// Subscribes this connection to a channel (`LISTEN "channel"`).
    public func listen(on channel: String) async throws {
        try await query("LISTEN \(quoteIdentifier(channel))")
    }

    /// Unsubscribes from a channel (`UNLISTEN "channel"`).
    public func unlisten(from channel: String) async throws {
        try await query("UNLISTEN \(quoteIdentifier(channel))")
    }

    /// Sends a notification (`SELECT pg_notify($1, $2)`), delivered when the transaction commits.
    public func notify(channel: String, payload: String = "") async throws {
        try await query("SELECT pg_notify($1, $2)", channel, payload)
    }

    /// The notifications this connection receives; see ``NotificationSequence``.
    public nonisolated func notifications() -> NotificationSequence {
        NotificationSequence(connection: self)
    }

    /// The notifications already received and not yet taken, without waiting: after one
    /// notification, take the others that arrived with it and act on them together.
    public func queuedNotifications() throws -> [PostgresNotification] {
        let handle = try liveHandle()
        guard PQconsumeInput(handle) == 1 else {
            markBroken()
            throw PostgresError(.connectionLost, message: "the connection was lost while reading notifications: "
                                + Self.trimmed(PQerrorMessage(handle)))
        }
        var taken: [PostgresNotification] = []
        while let notification = takeNotification(handle) { taken.append(notification) }
        return taken
    }

    func nextNotification() async throws -> PostgresNotification? {
        while true {
            if Task.isCancelled { return nil }
            let handle = try liveHandle()
            guard PQconsumeInput(handle) == 1 else {
                markBroken()
                throw PostgresError(.connectionLost, message: "the connection was lost while waiting for notifications: "
                                    + Self.trimmed(PQerrorMessage(handle)))
            }
            if let notification = takeNotification(handle) { return notification }
            let waiter = NotificationWaiter()
            notificationWaiter = waiter
            let socket = PQsocket(handle)
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    waiter.arm(continuation, socket: socket)
                }
            } onCancel: {
                waiter.resume()
            }
            if notificationWaiter === waiter { notificationWaiter = nil }
        }
    }

    private func takeNotification(_ handle: OpaquePointer) -> PostgresNotification? {
        guard let pointer = PQnotifies(handle) else { return nil }
        defer { PQfreemem(pointer) }
        let notify = pointer.pointee
        return PostgresNotification(channel: String(cString: notify.relname),
                                    payload: notify.extra.map { String(cString: $0) } ?? "",
                                    senderPID: notify.be_pid)
    }

    /// A statement may have read notifications off the socket; a waiter must then look again.
    func wakeNotificationWaiterIfQueued() {
        notificationWaiter?.resume()
        notificationWaiter = nil
    }
}
