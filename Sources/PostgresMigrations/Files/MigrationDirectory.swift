import Foundation

/// The migrations folder: every `<version>_<description>.sql` file in it, parsed and in
/// version order; the repeatable migrations (`R__<description>.sql`); the callbacks
/// (`beforeMigrate.sql`, …); and the checksum file `postgres-data.sum`, when there is one.
///
/// ```swift
/// let directory = try MigrationDirectory(path: "migrations")
/// for migration in directory.migrations { print(migration.version, migration.name) }
/// ```
public struct MigrationDirectory: Sendable {
    /// The folder's path.
    public let path: String
    /// The versioned migrations, in version order.
    public let migrations: [Migration]
    /// The repeatable migrations, in name order (run in that order after the versioned ones).
    public let repeatables: [Migration]
    /// The callbacks, in name order.
    public let callbacks: [MigrationCallback]
    /// The checksums of the folder's files as read (nil for migrations given in memory).
    public private(set) var sum: MigrationSum?

    /// Reads and parses every `.sql` file of the folder. Files whose names start with `.`
    /// and files that do not end in `.sql` are ignored; a `.sql` file that is neither a
    /// migration nor a callback, or two files with one version, are an error naming them.
    public init(path: String) throws(MigrationError) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw .invalidFile(file: path, line: nil,
                               message: "cannot read the migrations folder (\(error.localizedDescription)); create it or pass --dir")
        }
        var migrations: [Migration] = []
        var callbacks: [MigrationCallback] = []
        var texts: [(name: String, text: String)] = []
        for name in names.sorted() where name.hasSuffix(".sql") && !name.hasPrefix(".") {
            let text = try Self.read((path as NSString).appendingPathComponent(name), name: name)
            texts.append((name, text))
            if let callback = MigrationCallback(fileName: name, contents: text) {
                callbacks.append(callback)
            } else {
                migrations.append(try Migration(fileName: name, contents: text))
            }
        }
        let sum = MigrationSum(files: texts)
        let sumPath = (path as NSString).appendingPathComponent(MigrationSum.fileName)
        if FileManager.default.fileExists(atPath: sumPath) {
            let problems = sum.differences(fromRecorded: try Self.read(sumPath, name: MigrationSum.fileName))
            if !problems.isEmpty { throw .sumMismatch(file: sumPath, problems: problems) }
        }
        try self.init(path: path, migrations: migrations, callbacks: callbacks)
        self.sum = sum
    }

    /// Writes `postgres-data.sum` for the folder as it is now (after a review of its files).
    @discardableResult
    public static func writeSum(path: String) throws(MigrationError) -> MigrationSum {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw .invalidFile(file: path, line: nil, message: "cannot read the migrations folder (\(error.localizedDescription))")
        }
        var texts: [(name: String, text: String)] = []
        for name in names.sorted() where name.hasSuffix(".sql") && !name.hasPrefix(".") {
            texts.append((name, try read((path as NSString).appendingPathComponent(name), name: name)))
        }
        let sum = MigrationSum(files: texts)
        let sumPath = (path as NSString).appendingPathComponent(MigrationSum.fileName)
        guard FileManager.default.createFile(atPath: sumPath, contents: Data(sum.text.utf8)) else {
            throw .invalidFile(file: sumPath, line: nil, message: "cannot be written")
        }
        return sum
    }

    /// Whether the folder has a `postgres-data.sum` to keep up to date.
    public var hasSum: Bool {
        FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent(MigrationSum.fileName))
    }

    /// A file's text.
    static func read(_ filePath: String, name: String) throws(MigrationError) -> String {
        guard let contents = FileManager.default.contents(atPath: filePath) else {
            throw .invalidFile(file: name, line: nil, message: "cannot be read")
        }
        guard let text = String(data: contents, encoding: .utf8) else {
            throw .invalidFile(file: name, line: nil, message: "is not valid UTF-8")
        }
        return text
    }

    /// A directory made of migrations already in memory (an app embedding its migrations);
    /// repeatable ones (``Migration/isRepeatable``) are sorted out of `migrations`.
    public init(path: String = "<memory>", migrations: [Migration], callbacks: [MigrationCallback] = []) throws(MigrationError) {
        let versioned = migrations.filter { !$0.isRepeatable }
        let byVersion = Dictionary(grouping: versioned, by: \.version)
        if let duplicate = byVersion.filter({ $0.value.count > 1 }).min(by: { $0.key < $1.key }) {
            throw .duplicateVersion(duplicate.key, files: duplicate.value.map(\.fileName).sorted())
        }
        self.path = path
        self.migrations = versioned.sorted { $0.version < $1.version }
        repeatables = migrations.filter(\.isRepeatable).sorted { $0.fileName < $1.fileName }
        self.callbacks = callbacks.sorted { $0.fileName < $1.fileName }
        sum = nil
    }

    /// The callbacks of `event`, in name order.
    public func callbacks(_ event: MigrationCallback.Event) -> [MigrationCallback] {
        callbacks.filter { $0.event == event }
    }

    /// How `new` numbers a file.
    public enum VersionStyle: String, Sendable, CaseIterable {
        /// `0001`, `0002`, … one above the highest (the default for a new folder).
        case sequential
        /// `YYYYMMDDHHMMSS` in UTC, which branches rarely collide on.
        case timestamp
    }

    /// The style the folder already uses: timestamps when its highest version has 14
    /// digits, otherwise sequential.
    public var style: VersionStyle {
        (migrations.last?.version.text.count ?? 0) >= 14 ? .timestamp : .sequential
    }

    /// The file name `new` would create for `name`.
    public func newFileName(for name: String, style: VersionStyle? = nil, now: Date = Date()) throws(MigrationError) -> String {
        let slug = name.lowercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
            .split(separator: "_").joined(separator: "_")
        guard !slug.isEmpty else {
            throw .invalidFile(file: name, line: nil, message: "a migration name needs at least one letter or digit")
        }
        let version: String
        switch style ?? self.style {
        case .sequential:
            let next = (migrations.last.flatMap { Int($0.version.text) } ?? 0) + 1
            let width = max(4, migrations.last?.version.text.count ?? 4)
            version = String(repeating: "0", count: max(0, width - String(next).count)) + String(next)
        case .timestamp:
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: now)
            var stamp = String(format: "%04d%02d%02d%02d%02d%02d", parts.year!, parts.month!, parts.day!, parts.hour!, parts.minute!, parts.second!)
            if let last = migrations.last?.version, let candidate = MigrationVersion(stamp), candidate <= last {
                stamp = String((Int(last.text) ?? 0) + 1)
            }
            version = stamp
        }
        return "\(version)_\(slug).sql"
    }

    /// Creates the file for `name` — with `contents`, or empty up and down sections — and
    /// brings `postgres-data.sum` up to date when the folder has one; returns its path.
    /// A `repeatable` one is `R__<name>.sql`.
    public func createMigration(named name: String, style: VersionStyle? = nil, repeatable: Bool = false,
                                contents: String? = nil) throws(MigrationError) -> String {
        var fileName = try newFileName(for: name, style: style)
        if repeatable { fileName = "R__" + fileName[fileName.index(after: fileName.firstIndex(of: "_") ?? fileName.startIndex)...] }
        let filePath = (path as NSString).appendingPathComponent(fileName)
        let template = repeatable ? "-- migrate:up\n\n" : """
            -- migrate:up


            -- migrate:down


            """
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw .invalidFile(file: path, line: nil, message: "cannot create the folder (\(error.localizedDescription))")
        }
        guard !FileManager.default.fileExists(atPath: filePath) else {
            throw .invalidFile(file: filePath, line: nil, message: "already exists")
        }
        guard FileManager.default.createFile(atPath: filePath, contents: Data((contents ?? template).utf8)) else {
            throw .invalidFile(file: filePath, line: nil, message: "cannot be created")
        }
        if hasSum { try Self.writeSum(path: path) }
        return filePath
    }
}
