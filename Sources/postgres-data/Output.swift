import ArgumentParser
import Foundation
import PostgresClient
import PostgresMigrations

/// Prints for people (colour and a progress line on a terminal, plain lines otherwise) or,
/// with `--json`, one JSON document on standard output.
struct Output: Sendable {
    let json: Bool
    let isTerminal: Bool
    let color: Bool

    init(json: Bool, color: Bool) {
        self.json = json
        isTerminal = isatty(STDOUT_FILENO) == 1
        self.color = color && isTerminal && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
    }

    enum Style: String {
        case bold = "1", dim = "2", red = "31", green = "32", yellow = "33", cyan = "36"
    }

    func styled(_ text: String, _ style: Style) -> String {
        color ? "\u{1B}[\(style.rawValue)m\(text)\u{1B}[0m" : text
    }

    /// A line for people; nothing in JSON mode.
    func line(_ text: String) {
        guard !json else { return }
        clearProgress()
        print(text)
        fflush(nil)
    }

    /// A transient line on a terminal (rewritten in place); nothing otherwise.
    func progress(_ text: String) {
        // Rewriting a line takes escape sequences: not with NO_COLOR (nor off a terminal).
        guard !json, color else { return }
        FileHandle.standardOutput.write(Data("\r\u{1B}[2K\(text)".utf8))
    }

    func clearProgress() {
        guard !json, color else { return }
        FileHandle.standardOutput.write(Data("\r\u{1B}[2K".utf8))
    }

    /// The JSON document of a command's result.
    func document<Value: Encodable>(_ value: Value) throws {
        guard json else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// Reports `error` (as text on standard error, or as JSON) and returns the exit code.
    func fail(_ error: Error) -> ExitCode {
        let code = Self.exitCode(for: error)
        let message = (error as? MigrationError)?.description ?? (error as? PostgresError).map { MigrationError.database($0).description } ?? "\(error)"
        if json {
            let migrationError = error as? MigrationError
            let state = migrationError?.sqlState ?? (error as? PostgresError)?.sqlState
            try? document(["error": ErrorDocument(message: message, exitCode: code.rawValue, sqlState: state?.code,
                                                  file: migrationError?.file?.name, line: migrationError?.file?.line,
                                                  blockers: migrationError.map(\.blockers).flatMap { $0.isEmpty ? nil : $0 })])
        } else {
            clearProgress()
            FileHandle.standardError.write(Data((styled("error: ", .red) + message + "\n").utf8))
        }
        return code
    }

    /// A failure in JSON: the exit code a number, as the process's; the file, line and
    /// blocking sessions as fields of their own.
    struct ErrorDocument: Encodable {
        var message: String
        var exitCode: Int32
        var sqlState: String?
        var file: String?
        var line: Int?
        var blockers: [LockBlocker]?
    }

    /// The documented exit code of an error.
    static func exitCode(for error: Error) -> ExitCode {
        // A bad argument found while running (a version, a duration): a usage error.
        if error is ValidationError { return ExitCode(64) }
        switch error as? MigrationError {
        case .invalidFile?, .sumMismatch?, .duplicateVersion?, .edited?, .outOfOrder?, .unknownVersion?, .noDownSection?, .transactionControl?, .baselineRefused?:
            return ExitCode(2)
        case .lockTimeout?, .migrationLockTimeout?, .migrationLockLost?:
            return ExitCode(4)
        case .statementFailed?, .verificationFailed?, .invalidIndex?, .database?:
            return ExitCode(1)
        case nil:
            if let postgres = error as? PostgresError, postgres.kind == .invalidConfiguration { return ExitCode(64) }
            return ExitCode(1)
        }
    }

    /// Prints the runner's events as they happen.
    func eventPrinter() -> @Sendable (MigrationEvent) -> Void {
        let output = self
        return { event in
            switch event {
            case .waitingForMigrationLock(let holder):
                output.line(output.styled("waiting", .yellow) + " for the migration lock" + (holder.map { ", held by \($0)" } ?? " …"))
            case .acquiredMigrationLock:
                break
            case .started(let migration, let direction, let count, let resumingAt):
                let verb = direction == .up ? (resumingAt > 0 ? "resuming" : "applying") : "reverting"
                let suffix = resumingAt > 0 ? " at statement \(resumingAt + 1) of \(count)" : ""
                if output.isTerminal { output.progress("\(verb) \(migration.fileName)\(suffix) …") }
                else { output.line("\(verb) \(migration.fileName)\(suffix)") }
            case .statementFinished(let migration, let index, let count):
                output.progress("\(migration.fileName) " + output.styled("\(index + 1)/\(count) statements", .dim))
            case .retrying(let migration, let attempt, let delay, let blockers):
                output.line(output.styled("lock timeout", .yellow) + " in \(migration.fileName) (attempt \(attempt)); retrying in \(delay)"
                            + (blockers.isEmpty ? "" : "\n  blocked by:" + blockers.map { "\n    \($0)" }.joined()))
            case .finished(let migration, let direction, let duration):
                output.line(output.styled(direction == .up ? "✓ applied " : "✓ reverted ", .green) + migration.fileName
                            + output.styled(" (\(Self.format(duration)))", .dim))
            }
        }
    }

    static func format(_ duration: Duration) -> String {
        let milliseconds = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        return milliseconds < 1000 ? "\(Int(milliseconds)) ms" : String(format: "%.1f s", milliseconds / 1000)
    }
}
