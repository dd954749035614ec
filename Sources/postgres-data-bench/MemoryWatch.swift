import Foundation

/// The resident memory of one run of one side: the process's high-water mark during the run
/// (`VmHWM`, reset when the watch starts) and how far it rose above the resident memory the
/// run started from (`VmRSS` then).
///
/// The peak includes whatever earlier workloads left in the process (heap that `malloc_trim`
/// could not give back, caches, the server's shared libraries mapped by libpq), the same
/// for both sides of a row, which pulls their ratio towards 1. The growth is what the run
/// itself added: its ratio is the one to compare with a memory target.
struct MemoryWatch {
    private let startKiB: Int

    /// Gives memory freed by earlier runs back to the system (unless `BENCH_NO_TRIM` is set),
    /// resets the high-water mark and notes the resident memory.
    init() {
        if ProcessInfo.processInfo.environment["BENCH_NO_TRIM"] == nil { _ = mallocTrim(0) }
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        startKiB = Self.status()["VmRSS:"] ?? 0
    }

    /// The peak since the watch started, and its rise above the start, in MiB.
    func read() -> (peakMiB: Int, growthMiB: Int) {
        let peak = Self.status()["VmHWM:"] ?? 0
        return (peak / 1024, max(0, peak - startKiB) / 1024)
    }

    /// The `/proc/self/status` fields measured in kB, by name (with its colon).
    private static func status() -> [Substring: Int] {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        var fields: [Substring: Int] = [:]
        for line in text.split(separator: "\n") where line.hasSuffix(" kB") {
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if parts.count == 3, let kilobytes = Int(parts[1]) { fields[parts[0]] = kilobytes }
        }
        return fields
    }
}
