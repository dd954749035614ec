import Foundation

/// The migrations folder: every `<version>_<description>.sql` file in it, parsed and in
/// version order.
///
/// ```swift
/// let directory = try MigrationDirectory(path: "migrations")
/// for migration in directory.migrations { print(migration.version, migration.name) }
/// ```
public struct MigrationDirectory: Sendable {
    /// The folder's path.
    public let path: String
    /// The migrations, in version order.
    public let migrations: [Migration]

    /// Reads and parses every `.sql` file of the folder. Files whose names start with `.`
    /// and files that do not end in `.sql` are ignored; a `.sql` file that is not a valid
    /// migration, or two files with one version, are an error naming them.
    public init(path: String) throws(MigrationError) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw .invalidFile(file: path, line: nil,
                               message: "cannot read the migrations folder (\(error.localizedDescription)); create it or pass --dir")
        }
        var migrations: [Migration] = []
        for name in names.sorted() where name.hasSuffix(".sql") && !name.hasPrefix(".") {
            let filePath = (path as NSString).appendingPathComponent(name)
            guard let contents = FileManager.default.contents(atPath: filePath) else {
                throw .invalidFile(file: name, line: nil, message: "cannot be read")
            }
            guard let text = String(data: contents, encoding: .utf8) else {
                throw .invalidFile(file: name, line: nil, message: "is not valid UTF-8")
            }
            migrations.append(try Migration(fileName: name, contents: text))
        }
        try self.init(path: path, migrations: migrations)
    }

    /// A directory made of migrations already in memory (an app embedding its migrations).
    public init(path: String = "<memory>", migrations: [Migration]) throws(MigrationError) {
        let byVersion = Dictionary(grouping: migrations, by: \.version)
        if let duplicate = byVersion.filter({ $0.value.count > 1 }).min(by: { $0.key < $1.key }) {
            throw .duplicateVersion(duplicate.key, files: duplicate.value.map(\.fileName).sorted())
        }
        self.path = path
        self.migrations = migrations.sorted { $0.version < $1.version }
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

    /// Creates the file for `name` with empty up and down sections; returns its path.
    public func createMigration(named name: String, style: VersionStyle? = nil) throws(MigrationError) -> String {
        let fileName = try newFileName(for: name, style: style)
        let filePath = (path as NSString).appendingPathComponent(fileName)
        let template = """
            -- migrate:up


            -- migrate:down


            """
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw .invalidFile(file: path, line: nil, message: "cannot create the folder (\(error.localizedDescription))")
        }
        guard FileManager.default.createFile(atPath: filePath, contents: Data(template.utf8)) else {
            throw .invalidFile(file: filePath, line: nil, message: "cannot be created")
        }
        return filePath
    }
}
