import Foundation
import PostgresClient
import PostgresDataTesting
import Testing

@Suite("ConnectionPool: bounded, fair, self-healing")
struct ConnectionPoolTests {
    @Test func twoHundredTasksTimesFiftyQueriesOverEightConnections() async throws {
        let pool = ConnectionPool(configuration: try await TestServer.configuration(), maximumConnections: 8)
        let peakOpen = Locked(0)
        let total = try await withThrowingTaskGroup(of: Int64.self) { group in
            for task in 0..<200 {
                group.addTask {
                    var sum: Int64 = 0
                    for query in 0..<50 {
                        sum += try await pool.withConnection { connection async throws in
                            try await connection.query("SELECT $1::int8", Int64(task * 50 + query))[0].decode(Int64.self, at: 0)
                        }
                        if query % 10 == 0 {
                            let open = pool.statistics.open
                            peakOpen.withLock { $0 = max($0, open) }
                        }
                    }
                    return sum
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(total == (0..<10_000).reduce(0, +))
        let statistics = pool.statistics
        #expect(statistics.open <= 8)
        #expect(peakOpen.withLock { $0 } <= 8)
        #expect(statistics.leased == 0)
        await pool.shutdown()
    }

    @Test func leaseTimesOutWhenEveryConnectionIsHeld() async throws {
        let pool = ConnectionPool(configuration: try await TestServer.configuration(), maximumConnections: 1,
                                  leaseTimeout: .milliseconds(200))
        let held = try await pool.lease()
        let start = ContinuousClock.now
        let error = await capturePostgresError { _ = try await pool.lease() }
        #expect(error?.kind == .poolTimeout)
        #expect(ContinuousClock.now - start >= .milliseconds(150))
        await pool.release(held)
        let again = try await pool.lease()
        await pool.release(again)
        await pool.shutdown()
    }

    /// While the server is down every waiter gets the connection error of an attempt of its
    /// own; none is left queued with nothing opening for it until the lease timeout.
    @Test func waitersFailWithTheConnectionErrorWhenTheServerIsDown() async throws {
        var unreachable = try await TestServer.configuration()
        unreachable["host"] = "127.0.0.1"
        unreachable["port"] = "1"
        let pool = ConnectionPool(configuration: unreachable, maximumConnections: 2, leaseTimeout: .seconds(60))
        let kinds = await withTaskGroup(of: PostgresError.Kind?.self) { group in
            for _ in 0..<12 {
                group.addTask { await capturePostgresError { _ = try await pool.withConnection { _ in } }?.kind }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(kinds.count == 12 && kinds.allSatisfy { $0 == .connectionFailed }, "\(kinds)")
        // An attempt started for a waiter that another attempt's error already served ends too.
        try await Deadline.poll("no connection open or opening") { pool.statistics.open == 0 }
        await pool.shutdown()
    }

    @Test func waitersAreServedInArrivalOrder() async throws {
        let pool = ConnectionPool(configuration: try await TestServer.configuration(), maximumConnections: 1)
        let held = try await pool.lease()
        let order = Locked<[Int]>([])
        var waiters: [Task<Void, Error>] = []
        for index in 0..<5 {
            waiters.append(Task {
                try await pool.withConnection { _ in order.withLock { $0.append(index) } }
            })
            // Let each waiter enqueue before the next one starts.
            for _ in 0..<500 where pool.statistics.waiting < index + 1 { try await Task.sleep(for: .milliseconds(5)) }
        }
        await pool.release(held)
        for waiter in waiters { try await waiter.value }
        #expect(order.withLock { $0 } == [0, 1, 2, 3, 4])
        await pool.shutdown()
    }

    @Test func connectionReturnedInsideATransactionIsRolledBack() async throws {
        let table = TestServer.uniqueName("pool_rollback")
        let pool = ConnectionPool(configuration: try await TestServer.configuration(), maximumConnections: 1)
        try await pool.withConnection { try await $0.query("CREATE TABLE \(table) (n int)") }
        let connection = try await pool.lease()
        try await connection.query("BEGIN")
        try await connection.query("INSERT INTO \(table) VALUES (1)")
        await pool.release(connection)
        try await pool.withConnection { connection async throws in
            #expect(await connection.transactionStatus == .idle)
            #expect(try await connection.query("SELECT count(*) FROM \(table)")[0].decode(Int64.self, at: 0) == 0)
            try await connection.query("DROP TABLE \(table)")
        }
        await pool.shutdown()
    }

    /// A connection that sent a message larger than libpq's buffer should stay (a statement
    /// with 17 MiB of parameters, a large chunk of COPY data) is closed when it comes back, and
    /// the next lease gets a new session; one that sent small messages is kept.
    @Test func aConnectionThatSentALargeMessageIsNotKept() async throws {
        // Its messages and libpq's buffers for them hold about 100 MB: never while a test
        // measures the process's resident memory.
        try await MemoryIntensiveTests.sharingWithOthers { try await sendLargeMessagesThroughThePool() }
    }

    private func sendLargeMessagesThroughThePool() async throws {
        let pool = ConnectionPool(configuration: try await TestServer.configuration(), maximumConnections: 1)
        let small = try await pool.withConnection { connection async throws -> Int32 in
            #expect(try await connection.query("SELECT length($1)", Data(count: 1 << 20))[0].decode(Int32.self, at: 0) == 1 << 20)
            #expect(!connection.holdsLargeBuffer)
            return connection.backendPID
        }
        let large = try await pool.withConnection { connection async throws -> Int32 in
            #expect(connection.backendPID == small, "a connection that sent 1 MiB is kept")
            let bytes = Connection.largeMessageBytes + 1
            #expect(try await connection.query("SELECT length($1)", Data(count: bytes))[0].decode(Int32.self, at: 0) == Int32(bytes))
            #expect(connection.holdsLargeBuffer)
            return connection.backendPID
        }
        let copied = try await pool.withConnection { connection async throws -> Int32 in
            #expect(connection.backendPID != large, "a new session after the large message")
            #expect(!connection.holdsLargeBuffer)
            try await connection.execute(script: "CREATE TEMP TABLE blobs (b bytea)")
            let rows = try await connection.copyRows(into: "blobs", columns: ["b"]) { writer in
                try writer.appendEncodedRows(Self.copyRow(of: Connection.largeMessageBytes + 1), count: 1)
            }
            #expect(rows == 1)
            #expect(try await connection.query("SELECT length(b) FROM blobs")[0].decode(Int32.self, at: 0) == Int32(Connection.largeMessageBytes + 1))
            return connection.backendPID
        }
        #expect(copied != large)
        try await pool.withConnection { connection async throws in
            #expect(connection.backendPID != copied, "a new session after the large COPY data")
        }
        await pool.shutdown()
    }

    /// One row of binary COPY data: a single `bytea` column of `count` zero bytes.
    private static func copyRow(of count: Int) -> [UInt8] {
        var row: [UInt8] = [0, 1]
        withUnsafeBytes(of: Int32(count).bigEndian) { row.append(contentsOf: $0) }
        row.append(contentsOf: repeatElement(0, count: count))
        return row
    }

    @Test func whatALeaseLeavesInTheSessionIsGoneForTheNextOne() async throws {
        let pool = ConnectionPool(configuration: try await TestServer.configuration(), maximumConnections: 1)
        let pid = try await pool.withConnection { connection async throws -> Int32 in
            try await connection.execute(script: """
                SET application_name = 'dirty'; SET search_path = nowhere; LISTEN leftover;
                CREATE TEMP TABLE scratch (n int); SELECT pg_advisory_lock(4242)
                """)
            _ = try await connection.prepare("SELECT 1")
            return connection.backendPID
        }
        let connection = try await pool.lease()
        #expect(connection.backendPID == pid)  // the same session, cleaned
        let row = try await connection.query("""
            SELECT current_setting('application_name'), current_setting('search_path'),
                   (SELECT count(*) FROM pg_listening_channels()), to_regclass('pg_temp.scratch') IS NULL,
                   (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()),
                   (SELECT count(*) FROM pg_prepared_statements)
            """)[0]
        #expect(try row.decode(String.self, at: 0) != "dirty")
        #expect(try row.decode(String.self, at: 1) == "\"$user\", public")
        #expect(try row.decode(Int64.self, at: 2) == 0)
        #expect(try row.decode(Bool.self, at: 3))
        #expect(try row.decode(Int64.self, at: 4) == 0)
        #expect(try row.decode(Int64.self, at: 5) == 0)
        await pool.release(connection)

        // The library's own leases leave nothing behind and skip the round trip: a temporary
        // table made through one survives into the next.
        try await pool.withConnection(resettingSession: false) { try await $0.execute(script: "CREATE TEMP TABLE kept (n int)") }
        let kept = try await pool.withConnection(resettingSession: false) { connection async throws in
            try await connection.query("SELECT to_regclass('pg_temp.kept') IS NOT NULL")[0].decode(Bool.self, at: 0)
        }
        #expect(kept)
        await pool.shutdown()
    }

    @Test func killedBackendsUnderLoadCostOneQueryEachAndThePoolRecovers() async throws {
        // Its own application name, so that only this pool's backends are terminated.
        let name = TestServer.uniqueName("victims")
        var configuration = try await TestServer.configuration()
        configuration["application_name"] = name
        let pool = ConnectionPool(configuration: configuration, maximumConnections: 4)
        let failures = Locked(0)
        let successes = Locked(0)
        let stop = Locked(false)
        // The workers run until told to stop, so the kill lands mid-run however slow the
        // machine is: a fixed count of queries once ran out before the admin connection
        // opened, the kill hit idle connections, and the check after it paid for one.
        let workers = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        while !stop.withLock({ $0 }) {
                            do {
                                try await pool.withConnection { try await $0.query("SELECT pg_sleep(0.002)") }
                                successes.withLock { $0 += 1 }
                            } catch let error as PostgresError where error.kind == .connectionLost {
                                failures.withLock { $0 += 1 }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        try await Deadline.poll("the workers under way") { successes.withLock { $0 } >= 40 }
        // With a timeout, pg_terminate_backend returns once each backend has exited, so
        // every killed session's FATAL is on its socket before the count below starts.
        let killed = try await withConnection { admin async throws in
            try await admin.query("""
                SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 30000)) FROM pg_stat_activity
                WHERE application_name = $1
                """, name)[0].decode(Int64.self, at: 0)
        }
        let afterKill = successes.withLock { $0 } + 200
        try await Deadline.poll("the pool serving again under load") { successes.withLock { $0 } >= afterKill }
        stop.withLock { $0 = true }
        try await workers.value
        #expect(killed >= 1)
        #expect(failures.withLock { $0 } <= Int(killed), "each killed backend may cost at most the query it was running")
        // The pool serves again without a restart.
        let value = try await pool.withConnection { try await $0.query("SELECT 5")[0].decode(Int32.self, at: 0) }
        #expect(value == 5)
        #expect(pool.statistics.open <= 4)
        await pool.shutdown()
    }

    @Test func idleConnectionsKilledWhileIdleAreReplacedBeforeUse() async throws {
        let pool = ConnectionPool(configuration: try await TestServer.configuration(), maximumConnections: 2)
        let first = try await pool.lease()
        let pid = first.backendPID
        await pool.release(first)
        // With a timeout, pg_terminate_backend returns once the backend has exited (its
        // FATAL message already on the socket): "killed while idle" holds however loaded
        // the machine is, where a fixed sleep did not.
        let terminated = try await withConnection { admin async throws in
            try await admin.query("SELECT pg_terminate_backend($1, 30000)", pid)[0].decode(Bool.self, at: 0)
        }
        #expect(terminated)
        let value = try await pool.withConnection { connection async throws in
            #expect(connection.backendPID != pid)
            return try await connection.query("SELECT 9")[0].decode(Int32.self, at: 0)
        }
        #expect(value == 9)
        await pool.shutdown()
    }

    @Test func shutdownWaitsForLeasesAndRefusesNewOnes() async throws {
        let pool = ConnectionPool(configuration: try await TestServer.configuration(), maximumConnections: 2)
        let held = try await pool.lease()
        let finished = Locked(false)
        let shutdown = Task {
            await pool.shutdown()
            finished.withLock { $0 = true }
        }
        // The shutdown's task may start late on a loaded machine (it waited more than 10 s for
        // a cooperative thread while another test run shared the two cores): lease until the
        // pool refuses.
        var refused: PostgresError?
        let deadline = ContinuousClock.now + .seconds(60)
        while refused == nil && ContinuousClock.now < deadline {
            do {
                let extra = try await pool.lease()
                await pool.release(extra)
                try await Task.sleep(for: .milliseconds(10))
            } catch let error as PostgresError {
                refused = error
            }
        }
        #expect(refused?.kind == .poolClosed)
        #expect(finished.withLock { $0 } == false)
        #expect(try await held.query("SELECT 1")[0].decode(Int32.self, at: 0) == 1)
        await pool.release(held)
        await shutdown.value
        #expect(finished.withLock { $0 })
        #expect(held.isClosed)
    }

    /// Work started in the background from a thread that must not wait: on an idle
    /// connection's own thread at once, or not at all (the caller then takes the slow path).
    @Test func backgroundWorkStartsAtOnceOnAnIdleConnectionOrNotAtAll() async throws {
        let pool = ConnectionPool(configuration: try await TestServer.configuration(), maximumConnections: 1)
        let ran = Locked(0)
        // None open yet: nothing is opened or waited for.
        #expect(pool.startOnIdleConnection { _ in ran.withLock { $0 += 1 } } == nil)
        let idlePID = try await pool.withConnection { connection in connection.backendPID }
        // The idle connection runs it on its thread and comes back to the pool after.
        let task = pool.startOnIdleConnection { connection in
            let pid = try? await connection.query("SELECT pg_backend_pid()")[0].decode(Int32.self, at: 0)
            ran.withLock { $0 = Int(pid ?? -1) }
        }
        #expect(task != nil)
        await task?.value
        #expect(ran.withLock { $0 } == Int(idlePID))
        #expect(pool.statistics.leased == 0)
        #expect(pool.statistics.idle == 1)
        // Its only connection leased: nothing starts.
        let held = try await pool.lease()
        #expect(pool.startOnIdleConnection { _ in ran.withLock { $0 = -2 } } == nil)
        await pool.release(held)
        await pool.shutdown()
        #expect(pool.startOnIdleConnection { _ in ran.withLock { $0 = -3 } } == nil)
        #expect(ran.withLock { $0 } == Int(idlePID))
    }

    /// No library thread spins before sleeping while a context's block runs (it may keep its
    /// core busy, and a yield behind it waits out its slice).
    @Test func noThreadSpinsWhileABlockRuns() {
        let lock = NSCondition()
        lock.lock()
        defer { lock.unlock() }
        let spun = Spinning.busy { Spinning.spin(while: { true }, releasing: lock) }
        #expect(!spun)
        let nested = Spinning.busy { Spinning.busy { Spinning.spin(while: { true }, releasing: lock) } }
        #expect(!nested)
        // A block lent the thread while another waits for its store work counts too.
        let lent = Spinning.busy { Spinning.pausingBusy { Spinning.busy { Spinning.spin(while: { true }, releasing: lock) } } }
        #expect(!lent)
    }

    @Test func minimumConnectionsAreOpenedUpFront() async throws {
        let pool = ConnectionPool(configuration: try await TestServer.configuration(), minimumConnections: 3, maximumConnections: 5)
        // Up to 60 s, as the suite's other waits: a loaded machine can take seconds per connect.
        for _ in 0..<3_000 where pool.statistics.idle < 3 { try await Task.sleep(for: .milliseconds(20)) }
        #expect(pool.statistics.open == 3)
        #expect(pool.statistics.idle == 3)
        await pool.shutdown()
    }
}
