import Foundation

/// A silent network partition of one TCP port on the loopback interface, for tests: while it
/// holds, packets to and from the port are neither delivered nor refused — they wait in a
/// traffic-control class whose rate is 8 bits a second (`tc`: an HTB class, a `u32` filter on
/// the port), as packets do on a dropped link. Ending it deletes the classes; the queued
/// packets are lost and TCP retransmits.
///
/// Needs `tc` (iproute2) and `CAP_NET_ADMIN` (root); ``isAvailable`` says whether both are
/// there. Only one partition at a time: it owns the loopback interface's root qdisc.
public final class LoopbackPartition: Sendable {
    public let port: Int

    /// Starts the partition of `port`.
    public init(port: Int) throws {
        self.port = port
        try Self.tc(["qdisc", "add", "dev", "lo", "root", "handle", "1:", "htb", "default", "10", "r2q", "1"])
        do {
            try Self.tc(["class", "add", "dev", "lo", "parent", "1:", "classid", "1:10", "htb", "rate", "10gbit"])
            try Self.tc(["class", "add", "dev", "lo", "parent", "1:", "classid", "1:20", "htb", "rate", "8bit", "ceil", "8bit",
                         "burst", "1b", "cburst", "1b"])
            for direction in ["dport", "sport"] {
                try Self.tc(["filter", "add", "dev", "lo", "parent", "1:", "protocol", "ip", "u32",
                             "match", "ip", direction, String(port), "0xffff", "flowid", "1:20"])
            }
        } catch {
            end()
            throw error
        }
    }

    /// Ends the partition: the port's traffic flows again.
    public func end() {
        try? Self.tc(["qdisc", "del", "dev", "lo", "root"])
    }

    /// True when `tc` can change the loopback interface's qdisc here.
    public static var isAvailable: Bool {
        guard (try? tc(["qdisc", "show", "dev", "lo"])) != nil, geteuid() == 0 else { return false }
        return true
    }

    private static func tc(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ["/usr/sbin/tc", "/sbin/tc", "/usr/bin/tc"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        } ?? "/usr/sbin/tc")
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw TemporaryPostgresError("tc \(arguments.joined(separator: " ")) failed: \(message)")
        }
    }
}
