import Foundation
import PostgresClient
import Testing

@Suite("LISTEN / NOTIFY")
struct NotificationTests {
    @Test func notificationsArriveOnTheListeningConnection() async throws {
        let channel = TestServer.uniqueName("Items Changed")
        let listener = try await TestServer.connect()
        try await listener.listen(on: channel)
        let received = Task {
            var payloads: [String] = []
            for try await notification in listener.notifications() {
                #expect(notification.channel == channel)
                payloads.append(notification.payload)
                if payloads.count == 3 { break }
            }
            return payloads
        }
        try await withConnection { sender async throws in
            try await sender.notify(channel: channel, payload: "first")
            try await sender.notify(channel: channel, payload: "zwei — ✓")
            try await sender.withTransaction { connection async throws in
                try await connection.notify(channel: channel, payload: "after commit")
            }
        }
        let payloads = try await received.value
        #expect(payloads == ["first", "zwei — ✓", "after commit"])
        await listener.close()
    }

    @Test func theListeningConnectionStillRunsQueriesWhileWaiting() async throws {
        let channel = TestServer.uniqueName("busy")
        let listener = try await TestServer.connect()
        try await listener.listen(on: channel)
        let waiting = Task { () -> PostgresNotification? in
            var iterator = listener.notifications().makeAsyncIterator()
            return try await iterator.next()
        }
        try await Task.sleep(for: .milliseconds(100))
        // Another statement on the same connection while next() waits.
        #expect(try await listener.query("SELECT 7")[0].decode(Int32.self, at: 0) == 7)
        try await listener.notify(channel: channel, payload: "self")
        let notification = try await waiting.value
        #expect(notification?.payload == "self")
        #expect(notification?.senderPID == listener.backendPID)
        await listener.close()
    }

    @Test func cancellingTheWaitEndsTheSequence() async throws {
        let listener = try await TestServer.connect()
        try await listener.listen(on: "nobody_sends_here")
        let waiting = Task { () -> Int in
            var count = 0
            for try await _ in listener.notifications() { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(200))
        waiting.cancel()
        #expect(try await waiting.value == 0)
        #expect(try await listener.query("SELECT 1")[0].decode(Int32.self, at: 0) == 1)
        await listener.close()
    }
}
