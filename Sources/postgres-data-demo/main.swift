import Foundation
import Logging

// The README's first command (`make demo`): the seeds' story on 1,000,000 to-do items —
// migrate, import with progress, fetch asynchronously with progress per batch, batch update,
// cancel, resolve a merge conflict. DEMO_ROWS=N scales it.

// The story prints its own progress: the library's log speaks only of problems.
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .warning
    return handler
}

let rowCount = Int(ProcessInfo.processInfo.environment["DEMO_ROWS"] ?? "") ?? 1_000_000
let start = ContinuousClock.now
print("PostgresData demo — \(rowCount.formatted()) to-do items\n")
let database = try await DemoDatabase.open()
do {
    try await Demo(database: database, rowCount: rowCount).run()
} catch {
    print("\n✗ \(error)")
    await database.cleanUp()
    exit(1)
}
await database.cleanUp()
print("\nDone in \(ProgressBar.format(ContinuousClock.now - start))."
      + (database.schema == nil ? " The throwaway server and its data are removed as the demo exits." : ""))
