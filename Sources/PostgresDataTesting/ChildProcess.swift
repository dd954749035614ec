import Foundation
import PostgresClient

#if canImport(Glibc)
import Glibc
#endif

/// A program started with `posix_spawn` and reaped with `waitpid`: the server binaries, the
/// `postgres-data` tool in its tests, worker processes of the stress tests.
///
/// Foundation's `Process` on Linux notices a child's exit through a socket the child
/// inherits; any other process spawned meanwhile from another thread (a test starting a
/// server, say) can inherit it too and keep it open, and the exit is never noticed. Children
/// spawned here inherit only standard input, output and error.
public final class ChildProcess: Sendable {
    /// The child's process ID.
    public let pid: pid_t
    private let status = Locked<Int32?>(nil)

    /// Starts `arguments[0]` (a path) with `environment`; standard input is `/dev/null`, standard
    /// output goes to `outputPath` and standard error to `errorPath` (the same file when nil;
    /// `/dev/null` when both are nil), appended to.
    public init(_ arguments: [String], environment: [String: String], outputPath: String?, errorPath: String? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if let errorPath {
            posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        _ = Self.closeFrom?(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own: a Ctrl-C meant for the tests does not hit the server first.
        // No blocked or ignored signals either: the spawning thread (a dispatch or cooperative
        // thread) blocks most, and a child inheriting that mask would ignore SIGTERM.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw TemporaryPostgresError("cannot run \(arguments[0]): \(String(cString: strerror(result)))")
        }
        self.pid = pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later; not in Swift's view of its headers).
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Runs `arguments[0]` to its end with its output appended to `outputPath`; returns the exit status.
    static func run(_ arguments: [String], environment: [String: String], outputPath: String?) throws -> Int32 {
        let child = try ChildProcess(arguments, environment: environment, outputPath: outputPath)
        return child.reap(blocking: true) ?? -1
    }

    /// The path of an executable of this package built beside the running one (tests find
    /// the tools next to their bundle), or nil.
    public static func builtExecutable(named name: String) -> String? {
        let running = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: running).deletingLastPathComponent()
        while directory.path != "/" {
            let candidate = directory.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }

    /// The exit status (128 + the signal for a child killed by one), or nil while it runs.
    public var exitStatus: Int32? { reap(blocking: false) }

    /// Whether the child still runs.
    public var isRunning: Bool { exitStatus == nil }

    /// Sends `signal` (SIGKILL unless told) to the child, if it still runs.
    public func kill(_ signal: Int32 = SIGKILL) {
        if isRunning { _ = Glibc.kill(pid, signal) }
    }

    /// Waits for the child to end and returns its exit status; kills it first when it has not
    /// ended within `limit`.
    public func exit(within limit: Duration) async -> Int32 {
        let end = ContinuousClock.now + limit
        while true {
            if let status = exitStatus { return status }
            if ContinuousClock.now > end { kill() }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    private func reap(blocking: Bool) -> Int32? {
        status.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            var reaped: pid_t
            repeat { reaped = waitpid(pid, &raw, blocking ? 0 : WNOHANG) } while reaped == -1 && errno == EINTR
            guard reaped == pid else { return nil }
            // WIFEXITED / WEXITSTATUS, which Swift does not import as macros.
            status = (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
            return status
        }
    }
}
