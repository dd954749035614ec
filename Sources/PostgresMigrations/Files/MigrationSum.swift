import Foundation

/// The folder's checksum file, `postgres-data.sum` (as Atlas's `atlas.sum`): the SHA-256 of
/// every file of the folder, and of the whole list on the first line. Once the file exists
/// (`postgres-data hash` writes it, and `new`, `diff --write` and `stage --write` keep it
/// up to date), a folder whose files were edited, added, removed or renamed since is refused
/// before any database is reached — and two branches that each add a migration conflict in
/// it when merged, instead of applying in an order nobody reviewed.
///
/// ```
/// h1:9c0d…
/// 0001_create_items.sql h1:51ab…
/// 0002_index_items.sql h1:e3f0…
/// R__views.sql h1:77c2…
/// ```
public struct MigrationSum: Sendable, Equatable {
    /// The file's name in the folder.
    public static let fileName = "postgres-data.sum"

    /// File name → `h1:` and the SHA-256 of its text (line endings normalised).
    public let files: [(name: String, hash: String)]

    /// The sum of `files` (name, text), in name order.
    public init(files: [(name: String, text: String)]) {
        self.files = files.sorted { $0.name < $1.name }.map { file in
            (file.name, "h1:" + SHA256.hexDigest(of: Array(file.text.replacingOccurrences(of: "\r\n", with: "\n").utf8)))
        }
    }

    public static func == (lhs: MigrationSum, rhs: MigrationSum) -> Bool {
        lhs.files.elementsEqual(rhs.files) { $0.name == $1.name && $0.hash == $1.hash }
    }

    /// The hash of the list itself (the first line).
    public var total: String {
        "h1:" + SHA256.hexDigest(of: Array(files.map { "\($0.name) \($0.hash)\n" }.joined().utf8))
    }

    /// The file's text.
    public var text: String {
        total + "\n" + files.map { "\($0.name) \($0.hash)\n" }.joined()
    }

    /// What differs between the recorded sum text and this one: files edited, added or
    /// removed, or the sum file itself edited by hand. Empty when they agree.
    public func differences(fromRecorded recorded: String) -> [String] {
        var lines = recorded.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n").map(String.init)
        let recordedTotal = lines.isEmpty ? "" : lines.removeFirst()
        var recordedFiles: [String: String] = [:]
        for line in lines {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2 { recordedFiles[parts[0]] = parts[1] }
        }
        var problems: [String] = []
        for file in files {
            switch recordedFiles[file.name] {
            case nil: problems.append("\(file.name) is new")
            case file.hash?: break
            default: problems.append("\(file.name) was edited")
            }
        }
        for name in recordedFiles.keys.sorted() where !files.contains(where: { $0.name == name }) {
            problems.append("\(name) was removed or renamed")
        }
        if problems.isEmpty {
            let listed = MigrationSum(recordedLines: lines)
            if recordedTotal != listed.total { problems.append("\(Self.fileName) itself was edited (its first line does not match its list)") }
        }
        return problems
    }

    private init(recordedLines: [String]) {
        files = recordedLines.compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            return parts.count == 2 ? (parts[0], parts[1]) : nil
        }
    }
}
