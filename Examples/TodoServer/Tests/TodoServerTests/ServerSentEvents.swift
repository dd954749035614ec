import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A client of a server-sent-events endpoint on a socket of its own, read on a thread of its
/// own (never a cooperative one).
final class ServerSentEvents: @unchecked Sendable {
    struct Event: Sendable {
        var event: String
        var data: String
    }

    enum Failure: Error { case connect(Int32), timedOut }

    private let descriptor: Int32
    private let lock = NSLock()
    private var received: [Event] = []
    private var consumed = 0

    init(port: Int, path: String) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure.connect(errno) }
        let request = "GET \(path) HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n\r\n"
        _ = request.withCString { send(descriptor, $0, strlen($0), 0) }
        Thread { [self] in read() }.start()
    }

    private func read() {
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            text += String(decoding: buffer[0..<count], as: UTF8.self)
            // Events end with a blank line; the chunked framing and comments carry no field. (A
            // "\r\n" is one Character: lines split on any newline.)
            while let end = text.range(of: "\n\n") {
                let block = text[..<end.lowerBound]
                text = String(text[end.upperBound...])
                var event = Event(event: "", data: "")
                for line in block.split(whereSeparator: \.isNewline) {
                    if line.hasPrefix("event: ") { event.event = String(line.dropFirst(7)) }
                    if line.hasPrefix("data: ") { event.data = String(line.dropFirst(6)) }
                }
                if !event.event.isEmpty { lock.withLock { received.append(event) } }
            }
        }
    }

    /// The next event, or an error when none comes within `limit`.
    func next(within limit: Duration) async throws -> Event {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let event = lock.withLock { () -> Event? in
                guard consumed < received.count else { return nil }
                consumed += 1
                return received[consumed - 1]
            }
            if let event { return event }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw Failure.timedOut
    }

    func close() {
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
    }
}
