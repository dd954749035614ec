import Foundation
import PostgresClient
import PostgresDataTesting
import Testing

/// A silent network partition, made for real: the server's TCP port stops delivering packets
/// (neither answered nor refused). Operations in flight fail with a connection error within
/// the bound that TCP keepalives and `tcp_user_timeout` set, and the pool serves again when
/// the network returns.
@Suite("A silent network partition: bounded failures, then service again", .serialized)
struct NetworkPartitionTests {
    @Test(.enabled(if: LoopbackPartition.isAvailable, "needs tc and CAP_NET_ADMIN to drop the loopback port's packets"))
    func operationsInFlightFailWithinTheKeepaliveAndUserTimeoutBoundAndThePoolRecovers() async throws {
        // A cluster of its own, reached over TCP: the partition must not touch other suites.
        let server = try TemporaryPostgres.start()
        defer { server.stop() }
        var configuration = try Configuration(url: server.tcpURL)
        // The defaults (keepalives after 10 s, then 3 probes 5 s apart; tcp_user_timeout 30 s)
        // shrunk so that the test takes seconds: the bound is idle + count × interval for a
        // connection waiting for a reply, and the user timeout for one whose bytes go unacknowledged.
        configuration["keepalives_idle"] = "1"
        configuration["keepalives_interval"] = "1"
        configuration["keepalives_count"] = "2"
        configuration["tcp_user_timeout"] = "2000"
        // 3 s (keepalives) or 2 s (user timeout), with room for a loaded machine: in a full
        // suite on two cores the statement sent into the partition once failed after 14.6 s.
        // Without these settings it would take minutes (SYN retries, retransmissions) or forever.
        let bound = Duration.seconds(30)
        let pool = ConnectionPool(configuration: configuration, maximumConnections: 4, leaseTimeout: .seconds(30))
        // Four open connections.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { try await pool.withConnection { _ = try await $0.query("SELECT pg_sleep(0.1)") } } }
            try await group.waitForAll()
        }
        #expect(pool.statistics.open == 4)

        // A statement under way when the network goes: its answer never comes.
        let clock = ContinuousClock()
        // Long enough to be still under way however loaded the machine: the partition ends it.
        let waiting = Task { try await pool.withConnection { try await $0.query("SELECT pg_sleep(60)") } }
        let observer = try await Connection.connect(server.configuration)  // over the Unix socket: not partitioned
        try await Deadline.poll("pg_sleep under way") {
            try await observer.query("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'")[0].decode(Int64.self, at: 0) == 1
        }
        let partition = try LoopbackPartition(port: server.port)
        defer { partition.end() }  // also when an expectation throws; ending twice is harmless
        let partitionedAt = clock.now
        // A statement sent into the partition: its bytes are never acknowledged.
        let sent = Task { try await pool.withConnection { try await $0.query("SELECT 42") } }

        for (name, task) in [("the statement under way", waiting), ("the statement sent into the partition", sent)] {
            do {
                _ = try await task.value
                Issue.record("\(name) succeeded across a partition")
            } catch let error as PostgresError {
                // On a loaded machine the second lease can come after the idle connections'
                // keepalives ran out: the pool then discards them and cannot open a new one
                // across the partition.
                let expected: [PostgresError.Kind] = task == waiting ? [.connectionLost] : [.connectionLost, .connectionFailed]
                #expect(expected.contains(error.kind), "\(name): \(error)")
            }
            let elapsed = clock.now - partitionedAt
            #expect(elapsed < bound, "\(name) failed after \(elapsed), beyond \(bound)")
        }

        partition.end()
        // Connections that died in the partition are discarded as they are found; new ones open.
        var failures = 0
        try await Deadline.poll("the pool serving again", limit: .seconds(30), interval: .milliseconds(100)) {
            do {
                return try await pool.withConnection { try await $0.query("SELECT 7")[0].decode(Int32.self, at: 0) } == 7
            } catch {
                failures += 1
                return false
            }
        }
        #expect(failures <= 4, "\(failures) failed attempts after the network came back")
        await observer.close()
        await pool.shutdown()
    }
}
