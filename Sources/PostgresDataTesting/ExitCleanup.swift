import Foundation
import PostgresClient

#if canImport(Glibc)
import Glibc
#endif

/// Stops the servers tests start when the process ends: at a normal exit (an `atexit`
/// handler runs every registered stop, in order), and, should the process be killed, by a
/// small watchdog shell that runs cleanup commands once the process is gone.
enum ExitCleanup {
    private static let stops = Locked<[@Sendable () -> Void]>([])

    /// Runs `stop` when the process exits normally.
    static func atExit(_ stop: @escaping @Sendable () -> Void) {
        let first = stops.withLock { stops in
            stops.append(stop)
            return stops.count == 1
        }
        if first { atexit { ExitCleanup.runAll() } }
    }

    private static func runAll() {
        stops.withLock { stops in
            defer { stops.removeAll() }
            return stops
        }.forEach { $0() }
    }

    /// Runs the shell commands `cleanup` once this process has gone, however it ended.
    static func watchdog(_ cleanup: String) {
        let script = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done\n" + cleanup
        _ = try? ChildProcess(["/bin/sh", "-c", script], environment: ProcessInfo.processInfo.environment, outputPath: nil)
    }
}
