import Foundation
import PostgresClient
import PostgresDataTesting
import Testing

@Suite("The throwaway PostgreSQL", .serialized)
struct TemporaryPostgresTests {
    @Test func startsServesAndIsRemovedWhenStopped() async throws {
        let server = try TemporaryPostgres.start()
        #expect(FileManager.default.fileExists(atPath: server.dataDirectory + "/PG_VERSION"))
        let overSocket = try await Connection.connect(server.configuration)
        #expect(try await overSocket.query("SELECT current_setting('fsync')")[0].decode(String.self, at: 0) == "off")
        await overSocket.close()
        let overTCP = try await Connection.connect(url: server.tcpURL)
        #expect(try await overTCP.query("SELECT inet_server_port()")[0].decode(Int32.self, at: 0) == Int32(server.port))
        await overTCP.close()
        server.stop()
        #expect(!FileManager.default.fileExists(atPath: server.directory))
        let error = await #expect(throws: PostgresError.self) { _ = try await Connection.connect(server.configuration) }
        #expect(error?.kind == .connectionFailed)
    }

    @Test func aClusterThatKeepsNoDataLivesInMemoryWhenThereIsRoom() throws {
        #expect(TemporaryPostgres.parentDirectory(for: TemporaryPostgres.durableSettings) == "/tmp")
        var space = statvfs()
        let roomy = statvfs("/dev/shm", &space) == 0 && UInt64(space.f_bavail) * UInt64(space.f_frsize) >= 6 << 30
        #expect(TemporaryPostgres.parentDirectory(for: TemporaryPostgres.fastSettings) == (roomy ? "/dev/shm" : "/tmp"))
        let server = try TemporaryPostgres.start()
        defer { server.stop() }
        #expect(server.directory.hasPrefix((roomy ? "/dev/shm" : "/tmp") + "/postgres-data."))
        #expect(server.isInMemory == roomy)
    }

    @Test func restartDropsConnectionsAndKeepsData() async throws {
        let server = try TemporaryPostgres.start()
        defer { server.stop() }
        let connection = try await Connection.connect(server.configuration)
        try await connection.query("CREATE TABLE kept (n int)")
        try await connection.query("INSERT INTO kept VALUES (1)")
        try server.restart()
        let error = await #expect(throws: PostgresError.self) { try await connection.query("SELECT 1") }
        #expect(error?.kind == .connectionLost)
        let again = try await Connection.connect(server.configuration)
        #expect(try await again.query("SELECT count(*) FROM kept")[0].decode(Int64.self, at: 0) == 1)
        await again.close()
    }

    @Test func freshDatabasesAreSeparate() async throws {
        let first = try await TestDatabase.fresh(prefix: "separate")
        let second = try await TestDatabase.fresh(prefix: "separate")
        #expect(first.database != second.database)
        let a = try await Connection.connect(first)
        let b = try await Connection.connect(second)
        try await a.query("CREATE TABLE only_in_first (n int)")
        let visible = try await b.query("SELECT to_regclass('only_in_first') IS NOT NULL")[0].decode(Bool.self, at: 0)
        #expect(visible == false)
        await a.close()
        await b.close()
    }

    /// A descriptor open in this process (Foundation's `Process` keeps one per child to notice
    /// its exit) must not leak into children, or their lifetime hides that exit.
    @Test func childProcessesInheritOnlyTheStandardDescriptors() async throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("fds-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let child = try ChildProcess(["/bin/sh", "-c", "ls /proc/$$/fd"], environment: [:], outputPath: output)
        #expect(await child.exit(within: .seconds(30)) == 0)
        #expect(try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n") == ["0", "1", "2"])
        #expect(!child.isRunning)
    }

    /// Spawned from a thread that blocks signals (dispatch worker threads do), a child must
    /// still take SIGTERM: pgbouncer inherited such a mask, ignored SIGTERM and outlived the tests.
    @Test func childProcessesStartWithNoBlockedSignals() async throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("signals-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        func spawnWithSignalsBlocked(_ arguments: [String], outputPath: String?) throws -> ChildProcess {
            var all = sigset_t()
            var previous = sigset_t()
            sigfillset(&all)
            pthread_sigmask(SIG_SETMASK, &all, &previous)
            defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
            return try ChildProcess(arguments, environment: [:], outputPath: outputPath)
        }
        let child = try spawnWithSignalsBlocked(["/bin/grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"], outputPath: output)
        #expect(await child.exit(within: .seconds(30)) == 0)
        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").map { $0.split(separator: "\t").last.map(String.init) ?? "" }
        #expect(lines.count == 2)
        #expect(lines.first == "0000000000000000")
        // Of the ignored ones, only glibc's own real-time signals (32 and 33) may be set.
        #expect((UInt64(lines.last ?? "", radix: 16) ?? .max) & 0x7FFF_FFFF == 0)
        let sleeper = try spawnWithSignalsBlocked(["/bin/sleep", "60"], outputPath: nil)
        sleeper.kill(SIGTERM)
        #expect(await sleeper.exit(within: .seconds(30)) == 128 + SIGTERM)
    }
}
