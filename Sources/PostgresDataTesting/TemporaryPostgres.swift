import Foundation
import PostgresClient

#if canImport(Glibc)
import Glibc
#endif

/// A private PostgreSQL cluster in a temporary directory, for tests, benchmarks and demos.
///
/// ```swift
/// let server = try TemporaryPostgres.start()
/// let connection = try await Connection.connect(server.configuration)
/// ```
///
/// It runs `initdb` and `pg_ctl` (found on `PATH`, in `POSTGRES_BIN_DIR`, or under
/// `/usr/lib/postgresql/*/bin`) on a free TCP port on 127.0.0.1 and a Unix socket in its own
/// directory. As root, where `initdb` refuses to run, the server runs as the unprivileged
/// `postgres` user. The cluster is stopped and deleted when the process exits — and, should
/// the process be killed, by a small watchdog that notices it is gone.
public final class TemporaryPostgres: Sendable {
    /// The temporary directory holding the data directory, the socket and the log.
    public let directory: String
    public let dataDirectory: String
    public let port: Int
    /// The server binaries used.
    public let binaries: ServerBinaries
    /// True when the cluster lives in memory (``parentDirectory(for:)``).
    public var isInMemory: Bool { directory.hasPrefix(Self.memoryDirectory + "/") }
    /// The user the server runs as when this process is root.
    let serverUser: String?
    private let running = Locked(true)

    /// Settings that make a throwaway cluster fast: its data is never worth an fsync. Room for
    /// a thousand connections: a test suite's parallel tests share one cluster, each with its
    /// pools, listeners and tool processes.
    public static let fastSettings: [String: String] = [
        "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
        "max_connections": "1000", "shared_buffers": "128MB", "max_wal_size": "2GB",
    ]

    /// Settings a benchmark wants: durable commits, as in production. New WAL segments are
    /// not written full of zeros first (`wal_init_zero`, as on copy-on-write file systems):
    /// in a fresh cluster, where no segment is recycled yet, the commit that crossed into a
    /// new 16 MB segment took 15 ms instead of 2, on whichever side of a pair it fell.
    public static let durableSettings: [String: String] = ["max_connections": "300", "shared_buffers": "256MB", "max_wal_size": "4GB", "wal_init_zero": "off"]

    /// Initializes and starts a cluster. Throws ``TemporaryPostgresError`` naming what is
    /// missing (binaries, the `postgres` user) or what failed, with the server's log.
    ///
    /// A cluster whose settings never keep data (`fsync` off, as in ``fastSettings``) lives in
    /// memory, under `/dev/shm`, when that has room; any other under `/tmp`.
    public static func start(settings: [String: String] = fastSettings) throws -> TemporaryPostgres {
        try start(in: parentDirectory(for: settings)) { server in try server.initialize(settings: settings) }
    }

    /// Where a cluster with `settings` gets its directory. On a virtual disk every file
    /// PostgreSQL creates or opens can cost 5–20 ms: a `CREATE DATABASE` (some 300 files) took
    /// 1.7 s alone and 15–20 s under a test suite running in parallel, against 0.45 s in memory
    /// (2026-11-27, this project's 2-core machine). A durable cluster stays on disk, where a
    /// benchmark's commits are measured as in production; so does any cluster when
    /// `/dev/shm` is small (a container's default is 64 MB).
    public static func parentDirectory(for settings: [String: String]) -> String {
        guard settings["fsync"] == "off" else { return "/tmp" }
        var space = statvfs()
        guard statvfs(memoryDirectory, &space) == 0, access(memoryDirectory, W_OK) == 0 else { return "/tmp" }
        let available = UInt64(space.f_bavail) * UInt64(space.f_frsize)
        return available >= 6 << 30 ? memoryDirectory : "/tmp"
    }

    private static let memoryDirectory = "/dev/shm"

    /// Starts a streaming replica of this cluster (a hot standby: `pg_basebackup -R` of it,
    /// then a server of its own on another port), for tests of read replicas. Pause its
    /// replay with `SELECT pg_wal_replay_pause()` on it to hold it behind the primary.
    public func startStandby() throws -> TemporaryPostgres {
        let primary = self
        return try Self.start(in: (directory as NSString).deletingLastPathComponent) { standby in
            try standby.run(standby.binaries.directory + "/pg_basebackup",
                            ["-D", standby.dataDirectory, "-R", "-X", "stream", "-c", "fast", "--no-sync",
                             "-h", primary.directory, "-p", String(primary.port), "-U", "postgres"],
                            asServerUser: true)
            try? FileManager.default.removeItem(atPath: standby.dataDirectory + "/postmaster.opts")
            try standby.appendConfiguration([:])
        }
    }

    /// Creates the data directory with `prepare` in a new temporary directory, on a free
    /// port, and starts the server; retried when the port was taken meanwhile.
    private static func start(in parent: String, _ prepare: (TemporaryPostgres) throws -> Void) throws -> TemporaryPostgres {
        // The free port is found by binding port 0 and closing; by the time the server binds
        // it, another process (or an outgoing connection's ephemeral port) may hold it.
        for _ in 1..<5 {
            do {
                return try startOnce(in: parent, prepare)
            } catch let error as TemporaryPostgresError where error.message.contains("Address already in use") {
                continue
            }
        }
        return try startOnce(in: parent, prepare)
    }

    private static func startOnce(in parent: String, _ prepare: (TemporaryPostgres) throws -> Void) throws -> TemporaryPostgres {
        let binaries = try ServerBinaries.locate()
        let serverUser: String? = geteuid() == 0 ? "postgres" : nil
        var template = Array("\(parent)/postgres-data.XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw TemporaryPostgresError("cannot create a temporary directory: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: created)
        do {
            if let serverUser {
                guard let account = getpwnam(serverUser) else {
                    throw TemporaryPostgresError(
                        "running as root, the server needs the unprivileged user \"\(serverUser)\", which does not exist",
                        hint: "apt-get install -y postgresql creates it (or: useradd --system postgres).")
                }
                guard chown(directory, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
                    throw TemporaryPostgresError("cannot hand \(directory) to \(serverUser): \(String(cString: strerror(errno)))")
                }
            }
            let server = try TemporaryPostgres(directory: directory, port: try freePort(), binaries: binaries, serverUser: serverUser)
            try prepare(server)
            try server.launch()
            ExitCleanup.atExit { server.stop() }
            let pidFile = server.dataDirectory + "/postmaster.pid"
            ExitCleanup.watchdog("""
                if [ -f '\(pidFile)' ]; then kill -QUIT "$(head -1 '\(pidFile)')" 2>/dev/null; sleep 1; fi
                rm -rf '\(directory)'
                """)
            return server
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    private init(directory: String, port: Int, binaries: ServerBinaries, serverUser: String?) throws {
        self.directory = directory
        self.dataDirectory = directory + "/data"
        self.port = port
        self.binaries = binaries
        self.serverUser = serverUser
        self.configuration = try Configuration(keywords: ["host": directory, "port": String(port), "user": "postgres",
                                                          "dbname": "postgres", "connect_timeout": "60"])
    }

    /// Connects through the Unix socket as the `postgres` superuser to the `postgres` database,
    /// giving a connect 60 s rather than the default 10: a suite that runs its tests in
    /// parallel on a small machine can keep the server from starting a backend for longer.
    public let configuration: Configuration

    /// The same server over TCP on 127.0.0.1.
    public var tcpURL: String { "postgres://postgres@127.0.0.1:\(port)/postgres" }

    /// The Unix-socket URL.
    public var url: String { "postgres://postgres@/postgres?host=\(directory)&port=\(port)" }

    /// The server's log, for diagnosing a failure.
    public var log: String {
        (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
    }

    /// Stops the server at once (connections are dropped) and deletes its files.
    public func stop() {
        let wasRunning = running.withLock { running in
            defer { running = false }
            return running
        }
        guard wasRunning else { return }
        _ = try? run(binaries.pgCtl, ["-D", dataDirectory, "-m", "immediate", "-w", "stop"], asServerUser: true)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Restarts the server (`pg_ctl restart`, fast mode): every connection is dropped, the data stays.
    public func restart() throws {
        _ = try run(binaries.pgCtl, ["-D", dataDirectory, "-l", directory + "/server.log", "-m", "fast", "-w", "-t", "60",
                                     "restart"], asServerUser: true)
    }

    fileprivate func initialize(settings: [String: String]) throws {
        // C.UTF-8: code-point collation (the order PostgresData's in-memory evaluation uses)
        // with Unicode case mapping for lower()/upper(); plain C where the locale is missing.
        let common = ["-D", dataDirectory, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]
        do {
            _ = try run(binaries.initdb, common + ["--locale=C.UTF-8"], asServerUser: true)
        } catch {
            try? FileManager.default.removeItem(atPath: dataDirectory)
            _ = try run(binaries.initdb, common + ["--no-locale"], asServerUser: true)
        }
        try appendConfiguration(settings)
    }

    /// Appends this server's port and socket directory, and `settings`, to postgresql.conf
    /// (later lines win over those of a copied cluster).
    private func appendConfiguration(_ settings: [String: String]) throws {
        var configuration = "\n# PostgresDataTesting\nport = \(port)\nlisten_addresses = '127.0.0.1'\n"
        configuration += "unix_socket_directories = '\(directory)'\n"
        for (name, value) in settings.sorted(by: { $0.key < $1.key }) {
            configuration += "\(name) = '\(value.replacingOccurrences(of: "'", with: "''"))'\n"
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: dataDirectory + "/postgresql.conf"))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(configuration.utf8))
    }

    private func launch() throws {
        do {
            _ = try run(binaries.pgCtl, ["-D", dataDirectory, "-l", directory + "/server.log", "-w", "-t", "60", "start"],
                        asServerUser: true)
        } catch let error as TemporaryPostgresError {
            throw TemporaryPostgresError(error.message + "\nserver log:\n" + log, hint: error.hint)
        }
    }

    /// Runs a server binary, as the server user when this process is root; returns its output.
    @discardableResult
    func run(_ executable: String, _ arguments: [String], asServerUser: Bool) throws -> String {
        var command = [executable] + arguments
        if asServerUser, let serverUser {
            command = [ServerBinaries.runuser, "-u", serverUser, "--"] + command
        }
        var environment = ProcessInfo.processInfo.environment
        environment["LC_ALL"] = "C"
        environment.removeValue(forKey: "PGDATA")
        let outputPath = directory + "/command-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let status = try ChildProcess.run(command, environment: environment, outputPath: outputPath)
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw TemporaryPostgresError(
                "\((executable as NSString).lastPathComponent) \(arguments.joined(separator: " ")) failed "
                    + "(exit status \(status)):\n\(text)")
        }
        return text
    }

    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw TemporaryPostgresError("cannot open a socket to find a free port") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Bool in
                bind(socket, address, length) == 0 && getsockname(socket, address, &length) == 0
            }
        }
        guard bound else { throw TemporaryPostgresError("cannot find a free port on 127.0.0.1") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Where the PostgreSQL server binaries are.
public struct ServerBinaries: Sendable {
    public let initdb: String
    public let pgCtl: String
    /// The directory holding them.
    public let directory: String

    static let runuser: String = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"]
        .first { FileManager.default.isExecutableFile(atPath: $0) } ?? "runuser"

    /// Looks in `POSTGRES_BIN_DIR`, then `PATH`, then `/usr/lib/postgresql/<newest>/bin`.
    public static func locate() throws -> ServerBinaries {
        var candidates: [String] = []
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment["POSTGRES_BIN_DIR"] { candidates.append(explicit) }
        candidates += (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        candidates += versions.compactMap(Int.init).sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin" }
        for directory in candidates {
            let initdb = directory + "/initdb"
            let pgCtl = directory + "/pg_ctl"
            if FileManager.default.isExecutableFile(atPath: initdb) && FileManager.default.isExecutableFile(atPath: pgCtl) {
                // Resolve symlinks so that pg_ctl finds the postgres binary beside the real file.
                let real = (initdb as NSString).resolvingSymlinksInPath
                let realDirectory = (real as NSString).deletingLastPathComponent
                return ServerBinaries(initdb: realDirectory + "/initdb", pgCtl: realDirectory + "/pg_ctl", directory: realDirectory)
            }
        }
        throw TemporaryPostgresError(
            "the PostgreSQL server binaries (initdb, pg_ctl) were not found on PATH or under /usr/lib/postgresql",
            hint: "Install them with: apt-get install -y postgresql (or set POSTGRES_BIN_DIR, or DATABASE_URL to use a running server).")
    }
}

/// Why a throwaway PostgreSQL could not be started.
public struct TemporaryPostgresError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var hint: String?
    /// The process exited right after it started (a port taken meanwhile): worth a new try.
    var isEarlyExit = false

    public init(_ message: String, hint: String? = nil) {
        self.message = message
        self.hint = hint
    }

    public var description: String {
        hint.map { "\(message)\nHINT: \($0)" } ?? message
    }
}
