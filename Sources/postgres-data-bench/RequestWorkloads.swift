import CLibPQ
import Foundation
import PostgresClient
import PostgresData

// The request path of a server: many short units of work at once over a pool of 8.
//
// PostgresData (A): per unit of work a new background context and one async perform block:
//   read by key         — fetch the item whose unique name is the key (one SELECT of its
//                         columns and xmin);
//   read-modify-save    — the same fetch, then weight += 1 and save() (BEGIN, a version-
//                         checked UPDATE, COMMIT).
// Raw libpq (B): the same statements on 8 threads, each with its own PGconn (like pgbench -c 8
// -j 8), each running its share of the units one after another: SELECT the same columns by
// name (binary, every value decoded into a struct), then for the save BEGIN; UPDATE … SET
// weight = $1 WHERE id = $2 AND xmin = $3; COMMIT. Both sides send the same statements in the
// same number of round trips; neither side's setup (contexts aside) is timed.

/// Threads of this process now.
func processThreadCount() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("Threads:") } ?? ""
    return line.split(separator: "\t").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
}

/// Samples the thread count every 10 ms while alive.
final class ThreadSampler: @unchecked Sendable {
    private let peak = Locked(0)
    private let running = Locked(true)
    init() {
        peak.withLock { $0 = processThreadCount() }
        let thread = Thread { [self] in
            while running.withLock({ $0 }) {
                let now = processThreadCount()
                peak.withLock { $0 = max($0, now) }
                usleep(10_000)
            }
        }
        thread.start()
    }
    func stop() -> Int {
        running.withLock { $0 = false }
        return peak.withLock { $0 }
    }
}

/// CPU time (user and system) this process has used so far, in microseconds.
func processCPUMicroseconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func micros(_ time: timeval) -> Double { Double(time.tv_sec) * 1e6 + Double(time.tv_usec) }
    return micros(usage.ru_utime) + micros(usage.ru_stime)
}

/// Context switches (voluntary and not) of this process's threads so far.
func processContextSwitches() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_nvcsw + usage.ru_nivcsw)
}

/// A request workload's medians: operations per second, threads, peak memory and the
/// client's CPU time per operation (this process only, not the server's), A and B.
struct RequestResult {
    var name: String
    var concurrency: Int
    var clientOpsPerSecond, rawOpsPerSecond: Double
    var clientCPUMicroseconds, rawCPUMicroseconds: Double
    var clientSwitches, rawSwitches: Double
    var clientThreads, rawThreads, clientPeakMiB, rawPeakMiB: Int
}

/// Runs "read by key" and "read-modify-save" at each concurrency, A then B, `rounds` times
/// each, and returns the medians.
func runRequestWorkloads(container: PersistentContainer, client connection: Connection, configuration: Configuration,
                         keys: Int, concurrencies: [Int], rounds: Int) async throws -> [RequestResult] {
    try await fillItems(connection, rows: keys)
    try await connection.execute(script: "CREATE UNIQUE INDEX IF NOT EXISTS items_name_key ON items(name)")
    try await connection.execute(script: "ANALYZE items")
    var results: [RequestResult] = []
    for saves in [false, true] {
        for concurrency in concurrencies {
            let operations = max(concurrency, concurrency >= 1_000 ? concurrency : 4_000)
            var clientRates: [Double] = [], rawRates: [Double] = []
            var clientCPU: [Double] = [], rawCPU: [Double] = []
            var clientSwitches: [Double] = [], rawSwitches: [Double] = []
            var clientThreads = 0, rawThreads = 0, clientPeak = 0, rawPeak = 0
            for _ in 0..<rounds {
                var peak = measurePeak()
                var sampler = ThreadSampler()
                var start = ContinuousClock.now
                var cpu = processCPUMicroseconds()
                var switches = processContextSwitches()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<concurrency {
                        group.addTask {
                            var index = worker
                            while index < operations {
                                try await requestUnit(container, key: "item-\(1 + index % keys)", saves: saves)
                                index += concurrency
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                clientRates.append(Double(operations) / (milliseconds(ContinuousClock.now - start) / 1000))
                clientCPU.append((processCPUMicroseconds() - cpu) / Double(operations))
                clientSwitches.append((processContextSwitches() - switches) / Double(operations))
                clientThreads = max(clientThreads, sampler.stop())
                clientPeak = max(clientPeak, peak())

                peak = measurePeak()
                sampler = ThreadSampler()
                start = ContinuousClock.now
                cpu = processCPUMicroseconds()
                switches = processContextSwitches()
                try rawRequests(configuration, operations: operations, threads: min(8, concurrency), keys: keys, saves: saves)
                rawRates.append(Double(operations) / (milliseconds(ContinuousClock.now - start) / 1000))
                rawCPU.append((processCPUMicroseconds() - cpu) / Double(operations))
                rawSwitches.append((processContextSwitches() - switches) / Double(operations))
                rawThreads = max(rawThreads, sampler.stop())
                rawPeak = max(rawPeak, peak())
            }
            results.append(RequestResult(name: saves ? "read-modify-save" : "read by key", concurrency: concurrency,
                                         clientOpsPerSecond: median(clientRates), rawOpsPerSecond: median(rawRates),
                                         clientCPUMicroseconds: median(clientCPU), rawCPUMicroseconds: median(rawCPU),
                                         clientSwitches: median(clientSwitches), rawSwitches: median(rawSwitches),
                                         clientThreads: clientThreads, rawThreads: rawThreads,
                                         clientPeakMiB: clientPeak, rawPeakMiB: rawPeak))
        }
    }
    try await connection.execute(script: "DROP INDEX IF EXISTS items_name_key")
    return results
}

/// One unit of work through PostgresData.
func requestUnit(_ container: PersistentContainer, key: String, saves: Bool) async throws {
    let context = container.newBackgroundContext()
    context.mergePolicy = .mergeByPropertyObjectTrump
    try await context.perform {
        let request = FetchRequest<BenchItem>(predicate: try FetchPredicate(format: "name == %@", key))
        guard let item = try await context.fetch(request).first else { throw BenchmarkError("no \(key)") }
        guard saves else { return }
        item.weight += 1
        try await context.save()
    }
}

/// The same units of work through libpq on `threads` threads with a connection each.
func rawRequests(_ configuration: Configuration, operations: Int, threads: Int, keys: Int, saves: Bool) throws {
    let connections = try (0..<threads).map { _ in try RawConnection(configuration) }
    let failures = Locked<[String]>([])
    let group = DispatchGroup()
    for (worker, raw) in connections.enumerated() {
        group.enter()
        let thread = Thread {
            defer { group.leave() }
            var index = worker
            while index < operations {
                do {
                    try rawUnit(raw, key: "item-\(1 + index % keys)", saves: saves)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                    return
                }
                index += threads
            }
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
    if let failure = failures.withLock({ $0.first }) { throw BenchmarkError(failure) }
}

/// One raw unit of work: SELECT by key (columns and xmin decoded), then BEGIN, a
/// version-checked UPDATE, COMMIT. A row changed meanwhile is read again and retried, as
/// PostgresData's merge policy does.
func rawUnit(_ raw: RawConnection, key: String, saves: Bool) throws {
    while true {
        let select = "SELECT id, xmin, name, created_at, done, weight FROM items WHERE name = $1"
        let result = key.withCString { value -> OpaquePointer? in
            var values: [UnsafePointer<CChar>?] = [value]
            return PQexecParams(raw.handle, select, 1, nil, &values, nil, nil, 1)
        }
        guard let result, PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) == 1 else {
            throw BenchmarkError("raw select: \(String(cString: PQerrorMessage(raw.handle)))")
        }
        let id = Int64(bigEndian: UnsafeRawPointer(PQgetvalue(result, 0, 0)).loadUnaligned(as: Int64.self))
        let version = UInt32(bigEndian: UnsafeRawPointer(PQgetvalue(result, 0, 1)).loadUnaligned(as: UInt32.self))
        let namePointer = UnsafeRawPointer(PQgetvalue(result, 0, 2))
        let name = String(decoding: UnsafeRawBufferPointer(start: namePointer, count: Int(PQgetlength(result, 0, 2))), as: UTF8.self)
        let micros = Int64(bigEndian: UnsafeRawPointer(PQgetvalue(result, 0, 3)).loadUnaligned(as: Int64.self))
        let done = PQgetvalue(result, 0, 4).pointee != 0
        let weight = Int32(bigEndian: UnsafeRawPointer(PQgetvalue(result, 0, 5)).loadUnaligned(as: Int32.self))
        PQclear(result)
        let item = Item(id: id, name: name, createdAt: Date(timeIntervalSinceReferenceDate: Double(micros) / 1e6), done: done, weight: weight)
        guard saves else { return }
        try raw.exec("BEGIN")
        let parameters = ["\(item.weight + 1)", "\(item.id)", "\(version)"]
        let update = "UPDATE items SET weight = $1 WHERE id = $2 AND xmin = $3::text::xid"
        let updated = parameters[0].withCString { a in parameters[1].withCString { b in parameters[2].withCString { c -> OpaquePointer? in
            var values: [UnsafePointer<CChar>?] = [a, b, c]
            return PQexecParams(raw.handle, update, 3, nil, &values, nil, nil, 1)
        } } }
        guard let updated, PQresultStatus(updated) == PGRES_COMMAND_OK else {
            PQclear(updated)
            throw BenchmarkError("raw update: \(String(cString: PQerrorMessage(raw.handle)))")
        }
        let count = Int(String(cString: PQcmdTuples(updated))) ?? 0
        PQclear(updated)
        if count == 1 {
            try raw.exec("COMMIT")
            return
        }
        try raw.exec("ROLLBACK")
    }
}
