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

    /// Each workload of this run next to the same workload of `baseline`, flagging a ratio
    /// more than 10 % worse; returns the number of regressions.
    func compare(with baseline: BenchmarkRecord, label: String) -> Int {
        print("\ncompared with \(label) (commit \(baseline.commit), \(baseline.date)): ratio then → now")
        var regressions = 0
        for row in results {
            guard let old = baseline.results.first(where: { $0.workload == row.workload }) else { continue }
            let worse = row.higherIsBetter == true ? row.ratio < old.ratio / 1.1 : row.ratio > old.ratio * 1.1
            let better = row.higherIsBetter == true ? row.ratio > old.ratio * 1.1 : row.ratio < old.ratio / 1.1
            if worse { regressions += 1 }
            let mark = worse ? "  REGRESSION (>10 %)" : better ? "  better" : ""
            print("  \(row.workload.padding(toLength: 66, withPad: " ", startingAt: 0)) \(String(format: "%6.2f× → %6.2f×", old.ratio, row.ratio))\(mark)")
        }
        print(regressions == 0 ? "no workload regressed by more than 10 %" : "\(regressions) workload\(regressions == 1 ? "" : "s") regressed by more than 10 %")
        return regressions
    }
}
