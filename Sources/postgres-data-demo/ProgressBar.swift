import Foundation

/// A one-line progress bar with rate and time left on a terminal; on a pipe (CI logs), a line
/// every 10 %.
struct ProgressBar {
    let title: String
    let total: Int
    let unit: String
    private let start = ContinuousClock.now
    private var lastDecile = -1
    static let isTerminal = isatty(STDOUT_FILENO) != 0

    init(_ title: String, total: Int, unit: String = "rows") {
        self.title = title
        self.total = total
        self.unit = unit
    }

    mutating func update(_ done: Int, detail: String = "") {
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
        let elapsed = Self.seconds(ContinuousClock.now - start)
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        let eta = rate > 0 ? Double(total - done) / rate : 0
        let figures = "\(done.formatted())/\(total.formatted()) · \(Int(rate).formatted()) \(unit)/s · ETA \(String(format: "%.1f", eta)) s"
        if Self.isTerminal {
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            print("\r  \(title) \(bar) \(Int(fraction * 100))% \(figures) \(detail)   ", terminator: "")
            fflush(nil)  // all streams: `stdout` is a global Swift 6 will not touch
        } else {
            let decile = Int(fraction * 10)
            if decile > lastDecile {
                lastDecile = decile
                print("  \(title) \(decile * 10)% \(figures) \(detail)")
            }
        }
    }

    func finish(_ summary: String) {
        if Self.isTerminal { print("") }
        print("  ✓ \(summary) in \(Self.format(ContinuousClock.now - start))")
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func format(_ duration: Duration) -> String {
        let seconds = seconds(duration)
        return seconds < 1 ? String(format: "%.1f ms", seconds * 1000) : String(format: "%.2f s", seconds)
    }
}

/// Peak resident memory of this process (VmHWM), in MiB.
func peakMemoryMiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return (line.split(separator: " ").compactMap { Int($0) }.first ?? 0) / 1024
    }
    return 0
}
