import Foundation

/// A folder of its own in the system's temporary directory, for a test's files (a
/// migrations folder, a child process's output), removed when the process exits normally.
public enum TemporaryFolder {
    /// Creates `<temporary directory>/<prefix>-<8 hex digits>` and returns its path.
    public static func make(prefix: String) throws -> String {
        let path = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        ExitCleanup.atExit { try? FileManager.default.removeItem(atPath: path) }
        return path
    }
}
