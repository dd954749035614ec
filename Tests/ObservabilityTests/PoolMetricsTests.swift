import CoreMetrics
import MetricsTestKit
import PostgresClient
import PostgresDataTesting
import Testing

/// The pool's numbers through swift-metrics, read back from MetricsTestKit's factory.
@Suite struct PoolMetricsTests {
    @Test func thePoolPublishesItsConnectionsByStateItsWaitersAndItsTimeouts() async throws {
        let configuration = try await TestDatabase.server()
        let metrics = TestMetrics()
        let pool = withMetricsFactory(metrics) {
            ConnectionPool(configuration: configuration, maximumConnections: 1, leaseTimeout: .milliseconds(300), name: "orders")
        }
        let dimensions = [("db.client.connection.pool.name", "orders")]
        func count(_ state: String) throws -> Double? {
            try metrics.expectMeter("db.client.connection.count", [("db.client.connection.state", state)] + dimensions).lastValue
        }
        #expect(try metrics.expectMeter("db.client.connection.max", dimensions).lastValue == 1)

        let held = try await pool.lease()
        #expect(try count("used") == 1)
        #expect(try count("idle") == 0)
        // A second lease waits, then gives up: one pending request, then one timeout.
        let waiting = Task { try await pool.withConnection { _ in } }
        await #expect(throws: PostgresError.self) { try await waiting.value }
        #expect(try metrics.expectCounter("db.client.connection.timeouts", dimensions).totalValue == 1)
        // Every value the meter took, in order: none waiting, one, none again.
        #expect(try metrics.expectMeter("db.client.connection.pending_requests", dimensions).values == [0, 1, 0])

        await pool.release(held)
        #expect(try count("used") == 0)
        #expect(try count("idle") == 1)
        try await pool.withConnection { connection in
            _ = try await connection.query("SELECT pg_sleep(0.05)")
        }
        let useTimes = try metrics.expectTimer("db.client.connection.use_time", dimensions).values
        #expect(useTimes.count == 1 && useTimes[0] >= 50_000_000, "the lease held its connection ≥ 50 ms: \(useTimes)")
        // The first lease, the timed-out one is not a wait that ended with a connection, the last one.
        #expect(try metrics.expectTimer("db.client.connection.wait_time", dimensions).values.count == 2)
        #expect(try metrics.expectTimer("db.client.connection.create_time", dimensions).values.count == 1)
        await pool.shutdown()
        #expect(try count("idle") == 0)
    }

    @Test func aPoolIsNamedAfterItsServerAndDatabaseByDefault() async throws {
        let configuration = try Configuration(url: "postgres://app@db.internal:6432/orders")
        let metrics = TestMetrics()
        let pool = withMetricsFactory(metrics) { ConnectionPool(configuration: configuration) }
        #expect(pool.name == "db.internal:6432/orders")
        #expect(try metrics.expectMeter("db.client.connection.max", [("db.client.connection.pool.name", "db.internal:6432/orders")]).lastValue == 8)
        await pool.shutdown()
    }
}
