import Foundation

/// One line of the results: a workload's medians on both sides and their ratio.
struct Row: Codable {
    var workload: String
    var clientMilliseconds: Double
    var rawMilliseconds: Double
    var ratio: Double
    var clientPeakMiB: Int
    var rawPeakMiB: Int
    /// True for throughput rows (ops/s), where a higher ratio is better.
    var higherIsBetter: Bool? = nil
    /// How far each side's peak rose above the resident memory its run started from
    /// (``MemoryWatch``); nil in runs recorded before it was measured.
    var clientGrowthMiB: Int? = nil
    var rawGrowthMiB: Int? = nil
    /// Each pair of runs' ratio, in the order the pairs ran (a combined record holds every
    /// process's, one process after another); nil in runs recorded before they were kept.
    var pairRatios: [Double]? = nil
    /// Each process's ratio, in the order the processes ran (a combined record's, whose
    /// ``ratio`` is their median); nil for one process.
    var processRatios: [Double]? = nil

    /// The middle half of the pairs' ratios (their first and third quartiles), from four
    /// pairs on: how far one pair's ratio strays from the median on this machine.
    var ratioSpread: (low: Double, high: Double)? {
        guard let ratios = pairRatios, ratios.count >= 4 else { return nil }
        let sorted = ratios.sorted()
        func quantile(_ q: Double) -> Double { sorted[Int((Double(sorted.count - 1) * q).rounded())] }
        return (quantile(0.25), quantile(0.75))
    }

    /// The ratio of the two sides' memory growth, when both grew enough for a ratio to mean
    /// something (32 MiB: below it, the heap's own rounding decides).
    var memoryRatio: Double? {
        guard let client = clientGrowthMiB, let raw = rawGrowthMiB, client >= 32, raw >= 32 else { return nil }
        return Double(client) / Double(raw)
    }
}

/// A recorded run (`benchmarks/<UTC instant>-<commit>.json`): the results with what they were
/// measured on, so that a later run can be compared with it.
struct BenchmarkRecord: Codable {
    var date: String
    var commit: String
    var machine: String
    var postgres: String
    var rows: Int
    var runs: Int
    var results: [Row]
    /// How many processes the run combined (``init(combining:commit:)``); nil for one.
    var processes: Int? = nil

    /// The machine as `/proc` describes it: CPU model, cores, memory.
    static var machineDescription: String {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }?.split(separator: ":").last?
            .trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        let meminfo = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
        let kilobytes = meminfo.split(separator: "\n").first { $0.hasPrefix("MemTotal:") }?.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return "\(model), \(ProcessInfo.processInfo.activeProcessorCount) cores, \(kilobytes / 1024 / 1024) GiB, \(ProcessInfo.processInfo.operatingSystemVersionString)"
    }

    /// Reads a record, or a bare array of rows as older runs wrote them.
    static func read(_ path: String) throws -> BenchmarkRecord {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        if let record = try? JSONDecoder().decode(BenchmarkRecord.self, from: data) { return record }
        let rows = try JSONDecoder().decode([Row].self, from: data)
        return BenchmarkRecord(date: "?", commit: "?", machine: "?", postgres: "?", rows: 0, runs: 0, results: rows)
    }

    /// The run to compare with: the record at `path`, or, for a folder of records, the newest
    /// one made on `machine` (ratios move with the machine: a faster CPU speeds the raw loops
    /// more than an object graph bound by memory latency), else the newest of all; nil when
    /// there is none. `excluding` names the record this run just wrote.
    static func baseline(at path: String, for machine: String, excluding: String) throws -> (path: String, record: BenchmarkRecord)? {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { return nil }
        guard isFolder.boolValue else { return (path, try read(path)) }
        let names = try FileManager.default.contentsOfDirectory(atPath: path)
            .filter { $0.hasSuffix(".json") && $0 != excluding }.sorted(by: >)
        var newest: (path: String, record: BenchmarkRecord)?
        for name in names {
            let candidate = "\(path)/\(name)"
            guard let record = try? read(candidate) else { continue }
            if record.machine == machine { return (candidate, record) }
            if newest == nil { newest = (candidate, record) }
        }
        return newest
    }

    /// Each workload of this run next to the same workload of `baseline`, flagging a ratio
    /// (of time, and of memory growth where both runs measured it) more than 10 % worse;
    /// returns the number of regressions.
    func compare(with baseline: BenchmarkRecord, label: String) -> Int {
        print("\ncompared with \(label) (commit \(baseline.commit), \(baseline.date)): ratio then → now")
        if baseline.machine != machine {
            print("note: that run was made on another machine (\(baseline.machine)); ratios move with the machine, so a change here may be the machine's")
        }
        var regressions = 0
        for row in results {
            guard let old = baseline.results.first(where: { $0.workload == row.workload }) else { continue }
            let worse = row.higherIsBetter == true ? row.ratio < old.ratio / 1.1 : row.ratio > old.ratio * 1.1
            let better = row.higherIsBetter == true ? row.ratio > old.ratio * 1.1 : row.ratio < old.ratio / 1.1
            if worse { regressions += 1 }
            let mark = worse ? "  REGRESSION (>10 %)" : better ? "  better" : ""
            var memory = ""
            if let before = old.memoryRatio, let now = row.memoryRatio {
                let worseMemory = now > before * 1.1
                if worseMemory { regressions += 1 }
                memory = String(format: "   memory %5.2f× → %5.2f×", before, now) + (worseMemory ? "  MEMORY REGRESSION (>10 %)" : "")
            }
            print("  \(row.workload.padding(toLength: 66, withPad: " ", startingAt: 0)) \(String(format: "%6.2f× → %6.2f×", old.ratio, row.ratio))\(mark)\(memory)")
        }
        print(regressions == 0 ? "no workload regressed by more than 10 %" : "\(regressions) workload\(regressions == 1 ? "" : "s") regressed by more than 10 %")
        return regressions
    }
}
