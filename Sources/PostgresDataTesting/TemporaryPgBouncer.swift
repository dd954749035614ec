import Foundation
import PostgresClient

#if canImport(Glibc)
import Glibc
#endif

/// A PgBouncer in front of a ``TemporaryPostgres``, for tests of what works behind a pooler.
///
/// ```swift
/// let bouncer = try TemporaryPgBouncer.start(for: server, poolMode: "transaction", serverConnections: 2)
/// let connection = try await Connection.connect(bouncer.configuration(database: "app"))
/// ```
///
/// It runs `pgbouncer` (on `PATH` or in `/usr/sbin`; Debian's package `pgbouncer`) in the
/// foreground on a free port of 127.0.0.1 and a Unix socket in its own directory, with trust
/// authentication for the `postgres` user, who may also use its admin console (database
/// `pgbouncer`). As root it drops to the `postgres` user. It is stopped when the process
/// exits, or by a watchdog should the process be killed.
public final class TemporaryPgBouncer: Sendable {
    /// The temporary directory holding the configuration, the socket and the log.
    public let directory: String
    public let port: Int
    private let process: ChildProcess
    /// The configuration of ``configuration(database:)`` without its database.
    private let baseConfiguration: Configuration

    /// Starts PgBouncer for every database of `server`: `poolMode` is `session`,
    /// `transaction` or `statement`; `serverConnections` is the pool size per database and user.
    public static func start(for server: TemporaryPostgres, poolMode: String = "transaction",
                             serverConnections: Int = 2) throws -> TemporaryPgBouncer {
        // The free port can be taken by another process before pgbouncer binds it (tests
        // start servers in parallel): pgbouncer then exits, and a new port is tried.
        var attempt = 1
        while true {
            do {
                return try startOnce(for: server, poolMode: poolMode, serverConnections: serverConnections)
            } catch let error as TemporaryPostgresError where error.isEarlyExit && attempt < 4 {
                attempt += 1
            }
        }
    }

    private static func startOnce(for server: TemporaryPostgres, poolMode: String,
                                  serverConnections: Int) throws -> TemporaryPgBouncer {
        guard let executable = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer", "/usr/local/bin/pgbouncer"]
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TemporaryPostgresError("pgbouncer was not found in /usr/sbin, /usr/bin or /usr/local/bin",
                                         hint: "Install it with: apt-get install -y pgbouncer (scripts/bootstrap.sh does, for make test).")
        }
        var template = Array("/tmp/postgres-data-bouncer.XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw TemporaryPostgresError("cannot create a temporary directory: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: created)
        do {
            let port = try TemporaryPostgres.freePort()
            let configuration = """
                [databases]
                * = host=\(server.directory) port=\(server.port)

                [pgbouncer]
                listen_addr = 127.0.0.1
                listen_port = \(port)
                unix_socket_dir = \(directory)
                auth_type = trust
                auth_file = \(directory)/userlist.txt
                admin_users = postgres
                pool_mode = \(poolMode)
                default_pool_size = \(serverConnections)
                max_client_conn = 500
                logfile = \(directory)/pgbouncer.log
                ignore_startup_parameters = extra_float_digits
                server_login_retry = 1

                """
            try configuration.write(toFile: directory + "/pgbouncer.ini", atomically: true, encoding: .utf8)
            try "\"postgres\" \"\"\n".write(toFile: directory + "/userlist.txt", atomically: true, encoding: .utf8)
            // As long a wait as ``TemporaryPostgres/configuration``'s: a client's first login waits
            // for PgBouncer's first server connection, which a loaded test server can take
            // seconds to accept.
            let base = try Configuration(keywords: ["host": directory, "port": String(port), "user": "postgres",
                                                    "connect_timeout": "60"])
            var arguments = [executable]
            if geteuid() == 0 {
                guard let account = getpwnam("postgres") else {
                    throw TemporaryPostgresError("running as root, pgbouncer needs the unprivileged user \"postgres\", which does not exist",
                                                 hint: "apt-get install -y postgresql creates it.")
                }
                for path in [directory, directory + "/pgbouncer.ini", directory + "/userlist.txt"] {
                    guard chown(path, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
                        throw TemporaryPostgresError("cannot hand \(path) to postgres: \(String(cString: strerror(errno)))")
                    }
                }
                arguments += ["-u", "postgres"]
            }
            arguments.append(directory + "/pgbouncer.ini")
            let process = try ChildProcess(arguments, environment: ProcessInfo.processInfo.environment,
                                           outputPath: directory + "/pgbouncer.out")
            let bouncer = TemporaryPgBouncer(directory: directory, port: port, process: process, configuration: base)
            try bouncer.waitUntilListening()
            ExitCleanup.atExit { bouncer.stop() }
            ExitCleanup.watchdog("kill -TERM \(process.pid) 2>/dev/null\nrm -rf '\(directory)'")
            return bouncer
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    private init(directory: String, port: Int, process: ChildProcess, configuration: Configuration) {
        self.directory = directory
        self.port = port
        self.process = process
        self.baseConfiguration = configuration
    }

    /// Connects through PgBouncer's Unix socket as `postgres` to `database`, waiting up to
    /// 60 s, as ``TemporaryPostgres/configuration`` does.
    public func configuration(database: String) -> Configuration {
        var configuration = baseConfiguration
        configuration.database = database
        return configuration
    }

    /// Runs `body`; when it throws, throws its error again with PgBouncer's log attached, so
    /// that a failed test says what PgBouncer saw.
    public func reportingLog<T>(isolation: isolated (any Actor)? = #isolation,
                                _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw TemporaryPostgresError("\(error)\nPgBouncer's log (\(directory)):\n\(log)")
        }
    }

    /// PgBouncer's log, for diagnosing a failure: its log file, or what it printed when it
    /// exited before opening that (it prints the same lines to both).
    public var log: String {
        [directory + "/pgbouncer.log", directory + "/pgbouncer.out"]
            .lazy.compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }.first { !$0.isEmpty } ?? ""
    }

    /// True when something accepts connections on the Unix socket at `path`.
    private static func accepts(_ path: String) -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (offset, byte) in bytes.enumerated() { buffer[offset] = byte }
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }

    /// Stops PgBouncer at once and deletes its files.
    public func stop() {
        guard process.isRunning else { return }
        process.kill(SIGTERM)
        _ = process.exitStatus
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func waitUntilListening() throws {
        let socket = directory + "/.s.PGSQL.\(port)"
        for _ in 0..<500 {
            if !process.isRunning {
                var error = TemporaryPostgresError("pgbouncer exited at once:\n\(log)")
                error.isEarlyExit = true
                throw error
            }
            // The socket file alone is not enough: pgbouncer makes it before it has bound its
            // TCP port, and exits when that fails.
            if FileManager.default.fileExists(atPath: socket), Self.accepts(socket) { return }
            usleep(10_000)
        }
        process.kill()
        throw TemporaryPostgresError("pgbouncer did not listen within 5 s:\n\(log)")
    }
}
