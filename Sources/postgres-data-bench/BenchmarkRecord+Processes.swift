import Foundation

/// `--processes N`: the benchmark run N times, each in a process of its own with its own
/// throwaway server, one after another, and combined. One side of a workload can move by a
/// fifth for all the runs of one process (where they alternate with the other side's, pair
/// by pair), so that one process's ratio is one draw from a spread wider than many targets'
/// margins; the median of N processes' ratios is not.
extension BenchmarkRecord {
    /// Runs this program `count` times with `arguments`, each writing its record to a file of
    /// its own, and returns the records in the order they ran. A process that fails stops
    /// the run, naming it.
    static func runInProcesses(_ count: Int, arguments: [String]) throws -> [BenchmarkRecord] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("postgres-data-bench-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var records: [BenchmarkRecord] = []
        for index in 1...count {
            print("process \(index) of \(count)")
            fflush(nil)  // all streams: the children write to the same standard output
            let path = folder.appendingPathComponent("\(index).json").path
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            process.arguments = arguments + ["--json", path]
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw BenchmarkError("process \(index) of \(count) ended with status \(process.terminationStatus)")
            }
            records.append(try read(path))
        }
        return records
    }

    /// One record of `records` (runs of the same workloads, one per process): per workload,
    /// the median of the processes' ratios (each kept) and of each side's medians, the highest
    /// peaks and growths, every process's pair ratios. A workload some process did not run is
    /// left out.
    init(combining records: [BenchmarkRecord], commit: String) {
        let first = records.first
        var results: [Row] = []
        for row in first?.results ?? [] {
            let rows = records.compactMap { $0.results.first { $0.workload == row.workload } }
            guard rows.count == records.count else { continue }
            results.append(Row(workload: row.workload, clientMilliseconds: median(rows.map(\.clientMilliseconds)),
                               rawMilliseconds: median(rows.map(\.rawMilliseconds)), ratio: median(rows.map(\.ratio)),
                               clientPeakMiB: rows.map(\.clientPeakMiB).max() ?? 0, rawPeakMiB: rows.map(\.rawPeakMiB).max() ?? 0,
                               higherIsBetter: row.higherIsBetter,
                               clientGrowthMiB: rows.compactMap(\.clientGrowthMiB).max(), rawGrowthMiB: rows.compactMap(\.rawGrowthMiB).max(),
                               pairRatios: rows.allSatisfy { $0.pairRatios != nil } ? rows.flatMap { $0.pairRatios ?? [] } : nil,
                               processRatios: rows.map(\.ratio)))
        }
        self.init(date: first?.date ?? "?", commit: commit, machine: first?.machine ?? BenchmarkRecord.machineDescription,
                  postgres: first?.postgres ?? "?", rows: first?.rows ?? 0, runs: first?.runs ?? 0, results: results,
                  processes: records.count)
    }
}
