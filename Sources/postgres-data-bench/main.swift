import CLibPQ
import Foundation
import Logging
import PostgresClient
import PostgresData
import PostgresDataTesting

// postgres-data-bench: every workload through PostgresClient (A) and through raw libpq (B),
// alternating A B A B in one process run, medians printed with their ratio and peak memory.
//
//   swift run -c release postgres-data-bench [--rows N] [--runs N] [--cancel-runs N] [--merge-runs N] [--json PATH] [--only TEXT|TEXT…] [--processes N]
//
// Without DATABASE_URL it starts a throwaway PostgreSQL with durable settings (fsync on).
// Before each run freed memory goes back to the system (malloc_trim), so peaks are per run
// and every run starts on a cold heap; BENCH_NO_TRIM=1 keeps the heap warm, as a server would.

// The table is the output: the library's log speaks only of problems.
LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = .warning
    return handler
}

var rows = 1_000_000
var runs = 5
var cancelRuns = 50
var mergeRuns = 200
var jsonPath: String?
var recordFolder: String?
var comparePath: String?
var commit = ProcessInfo.processInfo.environment["BENCH_COMMIT"] ?? "unknown"
var only: String?
var processes = 1
/// Whether `--only` selects a workload (true without it): one of its `|`-separated texts passes `test`.
@MainActor func selects(_ test: (Substring) -> Bool) -> Bool {
    only.map { $0.split(separator: "|").contains(where: test) } ?? true
}
var requestConcurrencies = [1, 8, 64, 10_000]
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--rows": rows = Int(arguments.next() ?? "") ?? rows
    case "--runs": runs = Int(arguments.next() ?? "") ?? runs
    case "--cancel-runs": cancelRuns = Int(arguments.next() ?? "") ?? cancelRuns
    case "--merge-runs": mergeRuns = Int(arguments.next() ?? "") ?? mergeRuns
    case "--json": jsonPath = arguments.next()
    case "--record": recordFolder = arguments.next()
    case "--compare": comparePath = arguments.next()
    case "--commit": commit = arguments.next() ?? commit
    case "--only": only = arguments.next()
    case "--processes": processes = max(1, Int(arguments.next() ?? "") ?? 1)
    case "--concurrency":
        requestConcurrencies = (arguments.next() ?? "").split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
    default:
        print("usage: postgres-data-bench [--rows N] [--runs N] [--cancel-runs N] [--merge-runs N] [--json PATH] [--record FOLDER] [--compare PATH] [--commit HASH] [--only TEXT|TEXT…] [--concurrency 1,8,64,10000] [--processes N]")
        exit(argument == "--help" ? 0 : 2)
    }
}

/// Writes `record` where `--json` and `--record` ask, then compares it with `--compare`'s.
@MainActor func save(_ record: BenchmarkRecord) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    // Named by the UTC instant, then the commit: names sort in the order runs were recorded,
    // several a day included (`make bench` compares with the last one of this machine).
    let instantFormatter = ISO8601DateFormatter()
    instantFormatter.formatOptions = [.withFullDate, .withFullTime]
    let recordName = instantFormatter.string(from: Date()).replacingOccurrences(of: ":", with: "") + "-\(record.commit).json"
    for path in [jsonPath, recordFolder.map { "\($0)/\(recordName)" }].compactMap({ $0 }) {
        try encoder.encode(record).write(to: URL(fileURLWithPath: path))
        print("\nwrote \(path)")
    }
    if let comparePath, let baseline = try BenchmarkRecord.baseline(at: comparePath, for: record.machine, excluding: recordName) {
        _ = record.compare(with: baseline.record, label: baseline.path)
    }
}

let tableHeader = "workload                                                           PostgresData        raw libpq   ratio   peak (A)   peak (B) growth (A) growth (B)  pairs' middle half"

// `--processes N`: this run's arguments in N processes of their own, combined.
if processes > 1 {
    var childArguments: [String] = []
    var given = CommandLine.arguments.dropFirst().makeIterator()
    while let argument = given.next() {
        if ["--processes", "--json", "--record", "--compare"].contains(argument) {
            _ = given.next()
        } else {
            childArguments.append(argument)
        }
    }
    let combined = BenchmarkRecord(combining: try BenchmarkRecord.runInProcesses(processes, arguments: childArguments), commit: commit)
    print("\nthe \(processes) processes combined: medians of their medians, the median of their ratios, the highest peaks and growths\n")
    print(tableHeader + "  processes' ratios")
    for row in combined.results { printRow(row) }
    try save(combined)
    exit(0)
}

let configuration: Configuration
/// The throwaway server (none on `DATABASE_URL`); the replica workloads start a hot standby of it.
let server: TemporaryPostgres?
if let fromEnvironment = try Configuration.fromEnvironment() {
    configuration = try await TestDatabase.fresh(prefix: "bench")
    server = nil
    _ = fromEnvironment
} else {
    let started = try TemporaryPostgres.start(settings: TemporaryPostgres.durableSettings)
    configuration = started.configuration
    server = started
}
let connection = try await Connection.connect(configuration)
let raw = try RawConnection(configuration)
try await connection.execute(script: """
    DROP TABLE IF EXISTS items;
    CREATE TABLE items(id bigserial PRIMARY KEY, name text NOT NULL, created_at timestamptz NOT NULL,
                       done boolean NOT NULL DEFAULT false, weight integer NOT NULL DEFAULT 0);
    """)
let version = await connection.parameterStatus("server_version") ?? "?"
print("postgres-data-bench: PostgreSQL \(version), \(rows.formatted()) rows, \(runs) pairs of runs (W6 save: \(runs * w6PairsPerRun)) (A B, then B A, …): medians, and the median of the pairs' ratios\n")

var report: [Row] = []

/// glibc's malloc_trim: gives memory freed by earlier runs back to the system.
@_silgen_name("malloc_trim") func mallocTrim(_ pad: Int) -> Int32

/// Resets the peak-RSS counter and returns a closure reading the run's peak in MiB.
func measurePeak() -> () -> Int {
    let watch = MemoryWatch()
    return { watch.read().peakMiB }
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func printRow(_ row: Row) {
    let name = row.workload.padding(toLength: 66, withPad: " ", startingAt: 0)
    let growth = row.clientGrowthMiB.map { client in String(format: " %7d MiB %7d MiB", client, row.rawGrowthMiB ?? 0) } ?? ""
    // Throughput rows (the request workloads) hold operations a second where others hold times.
    let unit = row.higherIsBetter == true ? "/s" : "ms"
    let client = String(format: "%10.1f", row.clientMilliseconds), raw = String(format: "%10.1f", row.rawMilliseconds)
    // The pairs' middle half, where growth columns are printed (the workloads that alternate pairs).
    let spread = row.clientGrowthMiB == nil ? "" : row.ratioSpread.map { String(format: "  %.2f–%.2f×", $0.low, $0.high) } ?? ""
    // A combined record's: each process's ratio, in the order they ran.
    let processes = row.processRatios.map { "  " + $0.map { String(format: "%.2f", $0) }.joined(separator: " ") } ?? ""
    print("\(name) \(client) \(unit) \(raw) \(unit) \(String(format: "%7.2f× %7d MiB %7d MiB", row.ratio, row.clientPeakMiB, row.rawPeakMiB))\(growth)\(spread)\(processes)")
}

print(tableHeader)
let container = PersistentContainer(name: "Bench", model: ManagedObjectModel(BenchItem.self))
try await container.loadPersistentStores(configuration: configuration)
let tracked = PersistentContainer(name: "Tracked", model: ManagedObjectModel(BenchItem.self))
try await tracked.loadPersistentStores(configuration: configuration, options: .init(persistentHistoryTracking: true, remoteChangeNotifications: false))

/// Runs each selected workload in pairs and reports it; with a `standby`, each timed run
/// starts once it has replayed all the WAL written before.
@MainActor func run(_ workloads: [Workload], standby: Connection? = nil) async throws {
    for workload in workloads where selects(workload.name.contains) {
        var clientTimes: [Double] = []
        var rawTimes: [Double] = []
        var clientPeak = 0, rawPeak = 0
        var clientGrowth = 0, rawGrowth = 0
        /// One timed run of a side, after the workload's untimed preparation.
        func measure(_ body: () async throws -> Void, peak: inout Int, growth: inout Int) async throws -> Double {
            try await workload.prepare()
            // The standby replaying what earlier runs wrote would take a core from this one.
            if let standby { try await waitForStandbyReplay(of: connection, on: standby) }
            let watch = MemoryWatch()
            let start = ContinuousClock.now
            try await body()
            let elapsed = milliseconds(ContinuousClock.now - start)
            let memory = watch.read()
            peak = max(peak, memory.peakMiB)
            growth = max(growth, memory.growthMiB)
            return elapsed
        }
        // Pairs run A B, then B A, and so on: neither side always runs first after the other's
        // run, and each pair's ratio compares two runs made moments apart.
        for pair in 0..<runs * workload.pairsPerRun {
            if pair % 2 == 0 {
                clientTimes.append(try await measure({ try await workload.client() }, peak: &clientPeak, growth: &clientGrowth))
                rawTimes.append(try await measure({ try workload.raw() }, peak: &rawPeak, growth: &rawGrowth))
            } else {
                rawTimes.append(try await measure({ try workload.raw() }, peak: &rawPeak, growth: &rawGrowth))
                clientTimes.append(try await measure({ try await workload.client() }, peak: &clientPeak, growth: &clientGrowth))
            }
        }
        let pairRatios = zip(clientTimes, rawTimes).map { $0 / $1 }
        let row = Row(workload: workload.name, clientMilliseconds: median(clientTimes), rawMilliseconds: median(rawTimes),
                      ratio: median(pairRatios), clientPeakMiB: clientPeak, rawPeakMiB: rawPeak,
                      clientGrowthMiB: clientGrowth, rawGrowthMiB: rawGrowth, pairRatios: pairRatios)
        report.append(row)
        printRow(row)
    }
}

try await run(makeWorkloads(client: connection, raw: raw, rows: rows)
    + makeFetchWorkloads(container: container, client: connection, raw: raw, rows: rows)
    + makeObjectWorkloads(container: container, client: connection, raw: raw, rows: rows)
    + makeHistoryWorkloads(plain: container, tracked: tracked, client: connection, rows: rows))

// The replica workloads, with a hot standby of the throwaway server that runs for them alone:
// on this machine it shares the two cores with the client and the primary, and its replay of
// the WAL a run writes, while the run goes on, takes CPU from the side that keeps both cores
// busy (W1 save 1.26–1.29× with it, 1.21–1.25× without, three processes each, 2026-11-30 at
// cebc3b3). A deployment's replica is another machine.
if let server, selects({ $0.hasPrefix("R") }) {
    let standby = try server.startStandby()
    let standbyConnection = try await Connection.connect(standby.configuration)
    let replicated = PersistentContainer(name: "Replicated", model: ManagedObjectModel(BenchItem.self))
    try await replicated.loadPersistentStores(configuration: configuration,
                                              options: .init(readReplicaConfiguration: standby.configuration))
    try await run(makeReplicaWorkloads(plain: container, replicated: replicated, client: connection, standby: standbyConnection),
                  standby: standbyConnection)
    await replicated.persistentStoreCoordinator.close()
    await standbyConnection.close()
    standby.stop()
}

// The request path: units of work at 1, 8, 64 and 10,000 at once over a pool of 8.
if selects({ "request".contains($0) || $0.contains("request") }) {
    print("\nrequests (ops/s, pool of 8)             concurrency  PostgresData   raw libpq   ratio  threads (A/B)  peak MiB (A/B)  client CPU µs/op (A/B)  switches/op (A/B)")
    let requestRows = try await runRequestWorkloads(container: container, client: connection, configuration: configuration,
                                                    keys: 10_000, concurrencies: requestConcurrencies, rounds: max(1, min(runs, 3)))
    for result in requestRows {
        let name = result.name.padding(toLength: 40, withPad: " ", startingAt: 0)
        print("\(name) \(String(format: "%9d %12.0f %11.0f %6.2f× %7d/%-6d %7d/%-6d %10.0f/%-6.0f %9.1f/%-5.1f", result.concurrency, result.clientOpsPerSecond, result.rawOpsPerSecond, result.clientOpsPerSecond / result.rawOpsPerSecond, result.clientThreads, result.rawThreads, result.clientPeakMiB, result.rawPeakMiB, result.clientCPUMicroseconds, result.rawCPUMicroseconds, result.clientSwitches, result.rawSwitches))")
        report.append(Row(workload: "\(result.name) c=\(result.concurrency) (ops/s; ratio A/B)", clientMilliseconds: result.clientOpsPerSecond,
                          rawMilliseconds: result.rawOpsPerSecond, ratio: result.clientOpsPerSecond / result.rawOpsPerSecond,
                          clientPeakMiB: result.clientPeakMiB, rawPeakMiB: result.rawPeakMiB, higherIsBetter: true))
    }
    try await fillItems(connection, rows: rows)
}

// Cancel latency: from the cancel request to the statement's 57014 error, connection reused after each.
final class CancelClock: @unchecked Sendable {
    var requestedAt = ContinuousClock.now
    var cancel: OpaquePointer?
}

/// Sends `sql` on the raw connection, has another thread `PQcancel` it `delay` seconds
/// later, and returns the milliseconds from that request to the statement's error.
func rawCancelLatency(_ raw: RawConnection, sending sql: String, after delay: Double) async throws -> Double {
    guard PQsendQuery(raw.handle, sql) == 1 else { throw BenchmarkError("raw send") }
    let clock = CancelClock()
    clock.cancel = PQgetCancel(raw.handle)
    let canceller = Thread { [clock] in
        Thread.sleep(forTimeInterval: delay)
        clock.requestedAt = ContinuousClock.now
        var message = [CChar](repeating: 0, count: 256)
        _ = PQcancel(clock.cancel, &message, 256)
    }
    canceller.start()
    var erroredAt: ContinuousClock.Instant?
    while let result = PQgetResult(raw.handle) {
        if PQresultStatus(result) == PGRES_FATAL_ERROR && erroredAt == nil { erroredAt = ContinuousClock.now }
        PQclear(result)
    }
    while !canceller.isFinished { try await Task.sleep(for: .milliseconds(1)) }
    PQfreeCancel(clock.cancel)
    guard let erroredAt else { throw BenchmarkError("raw: \(sql) was not cancelled") }
    return milliseconds(erroredAt - clock.requestedAt)
}
var clientLatencies: [Double] = []
var rawLatencies: [Double] = []
for _ in 0..<cancelRuns {
    let sleeping = Task { try await connection.query("SELECT pg_sleep(10)") }
    try await Task.sleep(for: .milliseconds(200))
    let requested = ContinuousClock.now
    sleeping.cancel()
    do {
        _ = try await sleeping.value
        throw BenchmarkError("PostgresClient: pg_sleep was not cancelled")
    } catch let error as PostgresError where error.sqlState == .queryCanceled {
        clientLatencies.append(milliseconds(ContinuousClock.now - requested))
    }
    let answer = try await connection.query("SELECT 42")[0].decode(Int32.self, at: 0)
    precondition(answer == 42)

    rawLatencies.append(try await rawCancelLatency(raw, sending: "SELECT pg_sleep(10)", after: 0.2))
    try raw.exec("SELECT 42")
}
// The same for an asynchronous fetch whose statement waits on the server (the table is
// locked by another session): from cancel() to the end of wait().
var fetchLatencies: [Double] = []
for _ in 0..<cancelRuns {
    try await connection.execute(script: "BEGIN; LOCK TABLE items IN ACCESS EXCLUSIVE MODE")
    let context = container.newBackgroundContext()
    let result = try await context.perform { () throws in
        try context.execute(AsynchronousFetchRequest(fetchRequest: FetchRequest<BenchItem>()))
    }
    try await Task.sleep(for: .milliseconds(50))
    let requested = ContinuousClock.now
    result.cancel()
    do {
        try await result.wait()
        throw BenchmarkError("PostgresData: the asynchronous fetch was not cancelled")
    } catch let error as PostgresDataError where error.sqlState == "57014" {
        fetchLatencies.append(milliseconds(ContinuousClock.now - requested))
    }
    try await connection.execute(script: "ROLLBACK")
}
// The raw side of W5: the same cursor declared while the table is locked, cancelled with
// PQcancel from another thread 50 ms later, until its error arrives.
var rawFetchLatencies: [Double] = []
for _ in 0..<cancelRuns {
    try await connection.execute(script: "BEGIN; LOCK TABLE items IN ACCESS EXCLUSIVE MODE")
    try raw.exec("BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ")
    rawFetchLatencies.append(try await rawCancelLatency(raw, sending: "DECLARE c NO SCROLL CURSOR FOR \(selectAllWithVersions)", after: 0.05))
    try raw.exec("ROLLBACK")
    try await connection.execute(script: "ROLLBACK")
}
func percentile99(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((0.99 * Double(sorted.count)).rounded(.up)) - 1)]
}
for (label, client, rawValue) in cancelRuns < 1 ? [] : [("cancel pg_sleep: median latency", median(clientLatencies), median(rawLatencies)),
                                  ("cancel pg_sleep: p99 latency", percentile99(clientLatencies), percentile99(rawLatencies)),
                                  ("W5 cancel asynchronous fetch: median (B: cursor)", median(fetchLatencies), median(rawFetchLatencies)),
                                  ("W5 cancel asynchronous fetch: p99 (B: cursor)", percentile99(fetchLatencies), percentile99(rawFetchLatencies))] {
    let row = Row(workload: "\(label) (\(cancelRuns) runs)", clientMilliseconds: client, rawMilliseconds: rawValue,
                  ratio: client / rawValue, clientPeakMiB: 0, rawPeakMiB: 0)
    report.append(row)
    printRow(row)
}

// Cross-coordinator merge latency (persistent history + LISTEN/NOTIFY), against a bare NOTIFY.
if mergeRuns > 0, selects({ "merge latency".contains($0) }) {
    let (merge, rawMerge) = try await measureMergeLatency(configuration: configuration, saves: mergeRuns)
    for (label, client, rawValue) in [("merge latency median (B: INSERT+NOTIFY, read)", median(merge), median(rawMerge)),
                                      ("merge latency p99 (B: INSERT+NOTIFY, read)", percentile99(merge), percentile99(rawMerge))] {
        let row = Row(workload: "\(label) (\(mergeRuns) saves)", clientMilliseconds: client, rawMilliseconds: rawValue,
                      ratio: client / rawValue, clientPeakMiB: 0, rawPeakMiB: 0)
        report.append(row)
        printRow(row)
    }
}

let dayFormatter = ISO8601DateFormatter()
dayFormatter.formatOptions = [.withFullDate]
let record = BenchmarkRecord(date: dayFormatter.string(from: Date()), commit: commit, machine: BenchmarkRecord.machineDescription,
                             postgres: version, rows: rows, runs: runs, results: report)
try save(record)
await connection.close()
