import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs a program with `posix_spawn` and waits with `waitpid`.
///
/// Foundation's `Process` on Linux notices a child's exit through a descriptor the child
/// inherits; `pg_ctl start` leaves a daemon holding it, and `waitUntilExit()` never returns.
enum ChildProcess {
    /// Runs `arguments[0]` with its output appended to `outputPath`; returns the exit status.
    static func run(_ arguments: [String], environment: [String: String], outputPath: String?, wait: Bool = true) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let target = outputPath ?? "/dev/null"
        posix_spawn_file_actions_addopen(&actions, 1, target, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own: a Ctrl-C meant for the tests does not hit the server first.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw TemporaryPostgresError("cannot run \(arguments[0]): \(String(cString: strerror(status)))")
        }
        guard wait else { return 0 }
        var exit: Int32 = 0
        while waitpid(pid, &exit, 0) == -1 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS, which Swift does not import as macros.
        return (exit & 0x7f) == 0 ? (exit >> 8) & 0xff : 128 + (exit & 0x7f)
    }
}
