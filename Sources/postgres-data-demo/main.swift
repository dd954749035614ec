import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import TodoExample

// The README's first command: the seeds' story on 1,000,000 to-do items. The import goes
// through PostgresData's object graph (a background context, batched saves); the later steps
// still use PostgresClient until fetch, batch and asynchronous requests land (issues 4–6).

struct Item {
    var id: Int64
    var name: String
    var createdAt: Date
    var done: Bool
    var weight: Int32
}

let rowCount = Int(ProcessInfo.processInfo.environment["DEMO_ROWS"] ?? "") ?? 1_000_000

print("PostgresData demo — \(rowCount.formatted()) to-do items\n")
let usesOwnServer = ProcessInfo.processInfo.environment["DATABASE_URL"]?.isEmpty ?? true
print(usesOwnServer ? "• Starting a throwaway PostgreSQL (no DATABASE_URL set)…" : "• Using the server DATABASE_URL names…")
let database = try await TestDatabase.fresh(prefix: "postgres_data_demo")
let connection = try await Connection.connect(database)
let version = await connection.parameterStatus("server_version") ?? "?"
print("  ✓ PostgreSQL \(version), database \(database.database ?? "?")\n")

// 0. The schema comes from migrations/, applied by the migration tool as a deploy would.
print("• Applying migrations/ with `postgres-data up`")
let tool = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
    .deletingLastPathComponent().appendingPathComponent("postgres-data")
guard FileManager.default.isExecutableFile(atPath: tool.path) else {
    print("  ✗ \(tool.path) is missing: build it first (swift build -c release --product postgres-data; `make demo` does)")
    exit(1)
}
let migrate = Process()
migrate.executableURL = tool
migrate.arguments = ["up", "--dir", "migrations"]
// The URL (with its password, if any) goes through the environment, never the command line.
migrate.environment = ProcessInfo.processInfo.environment.merging(["DATABASE_URL": database.url(redactingPassword: false)]) { $1 }
try migrate.run()
migrate.waitUntilExit()
guard migrate.terminationStatus == 0 else {
    print("  ✗ postgres-data up failed with exit code \(migrate.terminationStatus)")
    exit(1)
}
let container = PersistentContainer(name: "Todo", model: todoModel)
// No createSchemaIfMissing: loading checks that the migrated schema is the model's.
try await container.loadPersistentStores(configuration: database)
print("  ✓ the migrated schema matches the model\n")

// 1. Import: a private-queue context creates the objects; each save of 50,000 is one
// transaction (keys in one round trip, rows by binary COPY); reset() keeps memory flat.
let chunk = 50_000
print("• Importing \(rowCount.formatted()) items in a background context, one save per \(chunk.formatted())")
var importBar = ProgressBar("import", total: rowCount)
let start = Date()
let background = container.newBackgroundContext()
var imported = 0
while imported < rowCount {
    let first = imported
    let count = min(chunk, rowCount - first)
    try await background.perform {
        for index in first..<first + count {
            let item = TodoItem(context: background)
            item.name = "Item \(index)"
            item.createdAt = start.addingTimeInterval(Double(index) / 1000)
            item.done = index % 4 == 0
            item.weight = Int32(index % 10)
        }
        try background.save()
        background.reset()
    }
    imported += count
    importBar.update(imported, detail: "\(imported / chunk) saves")
}
importBar.finish("imported \(imported.formatted()) objects in \((rowCount + chunk - 1) / chunk) saves, peak memory \(peakMemoryMiB()) MiB")
try await connection.query("ANALYZE items")

// 2. Asynchronous fetch: a server-side cursor, 10,000 rows a batch, progress per batch.
print("\n• Fetching them back through a cursor, 10,000 rows per batch")
var fetchBar = ProgressBar("fetch", total: rowCount)
var fetched = 0
var weights = 0
var batches = 0
for try await batch in try connection.stream("SELECT id, name, created_at, done, weight FROM items",
                                             mode: .cursor(batchSize: 10_000)) {
    for row in batch {
        let (id, name, createdAt, done, weight) = try row.decode((Int64, String, Date, Bool, Int32).self)
        let item = Item(id: id, name: name, createdAt: createdAt, done: done, weight: weight)
        weights += Int(item.weight)
    }
    fetched += batch.count
    batches += 1
    fetchBar.update(fetched, detail: "batch \(batches)")
}
fetchBar.finish("fetched \(fetched.formatted()) rows in \(batches) batches (sum of weights \(weights.formatted())), peak memory \(peakMemoryMiB()) MiB")

// For comparison: psql's COPY of the same rows to /dev/null.
if let psql = ["/usr/bin/psql", "/usr/local/bin/psql"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: psql)
    process.arguments = ["-X", "-q", "-d", database.connectionString(), "-c", "COPY (SELECT id, name, created_at, done, weight FROM items) TO STDOUT"]
    process.standardOutput = FileHandle.nullDevice
    let psqlStart = ContinuousClock.now
    try process.run()
    process.waitUntilExit()
    print("  (psql COPY of the same rows to /dev/null: \(ProgressBar.format(ContinuousClock.now - psqlStart)))")
}

// 3. Batch update: one UPDATE … RETURNING statement.
print("\n• Marking every unfinished heavy item done (one UPDATE … RETURNING id)")
let updateBar = ProgressBar("update", total: 1)
var updatedIDs = 0
for try await batch in try connection.stream("UPDATE items SET done = true, weight = weight + 1 WHERE NOT done AND weight >= $1 RETURNING id",
                                             Int32(5), mode: .singleRow(batchSize: 50_000)) {
    updatedIDs += batch.count
}
updateBar.finish("updated \(updatedIDs.formatted()) rows")

// 4. Cancel a long fetch: PQcancel reaches the server mid-FETCH; the connection stays usable.
print("\n• Cancelling a long cursor fetch 20 times (each FETCH would scan 200 × the table)")
var latencies: [Duration] = []
for _ in 0..<20 {
    let long = Task {
        for try await _ in try connection.stream(
            "SELECT i.id, i.name FROM items i CROSS JOIN generate_series(1, 200) g WHERE i.weight + g < 0",
            mode: .cursor(batchSize: 10_000)) {}
    }
    try await Task.sleep(for: .milliseconds(100))
    let cancelAt = ContinuousClock.now
    long.cancel()
    do {
        try await long.value
    } catch let error as PostgresError where error.kind == .canceled {
        latencies.append(ContinuousClock.now - cancelAt)
    }
}
latencies.sort()
let idle = await connection.transactionStatus == .idle
let check = try await connection.query("SELECT count(*) FROM items WHERE done")[0].decode(Int64.self, at: 0)
print("  ✓ \(latencies.count)/20 cancelled (SQLSTATE 57014): median \(ProgressBar.format(latencies[latencies.count / 2])), "
      + "worst \(ProgressBar.format(latencies.last!)); afterwards the connection was \(idle ? "idle" : "NOT idle") "
      + "and counted \(check.formatted()) done items")

await connection.close()
print("\nDone. The throwaway server and its data are removed as the demo exits.")
