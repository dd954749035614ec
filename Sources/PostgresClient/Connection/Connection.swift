import CLibPQ
import Foundation
import Logging

/// One connection to PostgreSQL through libpq.
///
/// ```swift
/// let connection = try await Connection.connect(url: "postgres://localhost/todo")
/// let rows = try await connection.query("SELECT id, name FROM items WHERE weight >= $1", 10)
/// for row in rows { let (id, name) = try row.decode((Int64, String).self) }
/// ```
///
/// ## Threading
///
/// A connection is an actor whose executor is **its own thread**. libpq runs in blocking
/// mode on that thread, so a slow statement blocks that thread only and never one of
/// Swift's cooperative threads; callers `await` and are resumed when the result is
/// complete. This was chosen over non-blocking libpq with a poll loop because libpq's
/// blocking calls are its best-tested path (COPY, single-row mode, cursors, TLS
/// renegotiation all just work), the cost is one hop per statement (not per row — a whole
/// result or batch crosses at once), and cancellation does not need the connection's
/// thread at all: ``cancelHandle`` sends `PQcancel` from any thread. What must wait for
/// the network without blocking the thread (waiting for notifications) watches the
/// socket with a dispatch source instead.
///
/// A connection runs one statement at a time; use a ``ConnectionPool`` to share
/// connections between tasks. Every value is a bind parameter; results come back in
/// binary format.
public actor Connection {
    nonisolated let thread: ConnectionThread
    public nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }

    /// Where this connection goes (shown with the password redacted).
    public nonisolated let configuration: Configuration
    /// Cancels the running statement from any thread or task.
    public nonisolated let cancelHandle = CancelHandle()
    nonisolated let logger: Logger
    nonisolated let health = Locked(Health())
    nonisolated let pendingCleanups = Locked<[StreamState]>([])

    var handle: OpaquePointer?
    var savepointCounter = 0
    var cursorCounter = 0
    var statementCounter = 0
    /// The stream that owns the connection's state: a single-row statement in flight, or a
    /// cursor in a transaction the stream opened. Another statement ends it first.
    var activeStream: StreamState?
    /// The cursor stream whose next `FETCH` was sent ahead and not read yet: any other
    /// statement reads it first (``Connection/receiveAhead(_:)``).
    var readingAhead: StreamState?
    var notificationWaiter: NotificationWaiter?
    private var noticeBox: Unmanaged<NoticeBox>?

    /// What a pool may read without hopping onto the connection's thread.
    struct Health: Sendable {
        var isBroken = false
        var isClosed = false
        var needsReset = false
        /// Leased to code whose statements may leave session state: `DISCARD ALL` on release.
        var sessionNeedsReset = false
        /// A message larger than ``Connection/largeMessageBytes`` was sent: libpq's output
        /// buffer grew to its size and never shrinks, so a pool closes the connection rather
        /// than keep the memory.
        var sentLargeMessage = false
        var socket: Int32 = -1
        var backendPID: Int32 = 0
    }

    private init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.thread = ConnectionThread(name: "postgres \(configuration.host ?? "local")")
    }

    // Runs on the connection's thread, like every other use of the handle.
    isolated deinit {
        if let handle { PQfinish(handle) }
        noticeBox?.release()
        thread.shutdown()
    }

    /// Opens a connection described by a `postgres://` URL.
    public static func connect(url: String, logger: Logger = Logger(label: "PostgresClient")) async throws -> Connection {
        try await connect(Configuration(url: url), logger: logger)
    }

    /// Opens a connection. Throws ``PostgresError/Kind/connectionFailed`` with libpq's
    /// reason (refused, unknown host, authentication) and the URL without its password.
    public static func connect(_ configuration: Configuration, logger: Logger = Logger(label: "PostgresClient")) async throws -> Connection {
        let connection = Connection(configuration: configuration, logger: logger)
        try await connection.open()
        return connection
    }

    private func open() throws {
        let keywords = configuration.connectionKeywords()
        let names = keywords.map { strdup($0.0) }
        let values = keywords.map { strdup($0.1) }
        defer {
            names.forEach { free($0) }
            values.forEach { free($0) }
        }
        let handle = (names.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { names in
            (values.map { UnsafePointer($0) } + [nil]).withUnsafeBufferPointer { values in
                PQconnectdbParams(names.baseAddress, values.baseAddress, 0)
            }
        }
        guard let handle else {
            throw PostgresError(.connectionFailed, message: "libpq could not allocate a connection")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let reason = configuration.redact(Self.trimmed(PQerrorMessage(handle)))
            PQfinish(handle)
            var error = PostgresError(
                .connectionFailed, message: "could not connect to \(configuration.redactedURL): \(reason)",
                hint: Self.connectionHint(for: reason))
            if reason.contains("password authentication failed") { error.sqlState = .invalidPassword }
            if reason.contains("does not exist") && reason.contains("database") { error.sqlState = .invalidCatalogName }
            throw error
        }
        self.handle = handle
        let box = Unmanaged.passRetained(NoticeBox(logger: logger))
        noticeBox = box
        PQsetNoticeReceiver(handle, { context, result in
            guard let context, let result else { return }
            Unmanaged<NoticeBox>.fromOpaque(context).takeUnretainedValue().receive(result)
        }, box.toOpaque())
        cancelHandle.install(handle)
        let socket = PQsocket(handle)
        let pid = PQbackendPID(handle)
        health.withLock {
            $0.socket = socket
            $0.backendPID = pid
        }
        logger.debug("connected", metadata: ["url": "\(configuration.redactedURL)", "pid": "\(pid)"])
    }

    /// Closes the connection. Later calls throw ``PostgresError/Kind/connectionClosed``.
    public func close() {
        wakeNotificationWaiterIfQueued()
        if let handle { PQfinish(handle) }
        handle = nil
        health.withLock { $0.isClosed = true }
    }

    /// The server process serving this connection (`pg_backend_pid()`).
    public nonisolated var backendPID: Int32 { health.withLock { $0.backendPID } }

    /// True once the connection has broken (server gone, backend terminated) or was closed.
    public nonisolated var isClosed: Bool { health.withLock { $0.isBroken || $0.isClosed } }

    /// The server's version number (`150004` for 15.4).
    public var serverVersion: Int {
        handle.map { Int(PQserverVersion($0)) } ?? 0
    }

    /// A server setting reported at connection time (`server_version`, `TimeZone`, `DateStyle`, …).
    public func parameterStatus(_ name: String) -> String? {
        guard let handle, let value = PQparameterStatus(handle, name) else { return nil }
        return String(cString: value)
    }

    /// Whether the connection is idle, in a transaction, or in a failed transaction.
    public var transactionStatus: TransactionStatus {
        guard let handle else { return .unknown }
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE: return .idle
        case PQTRANS_INTRANS: return .inTransaction
        case PQTRANS_INERROR: return .failed
        case PQTRANS_ACTIVE: return .active
        default: return .unknown
        }
    }

    /// The state of the connection's transaction.
    public enum TransactionStatus: Sendable {
        case idle, active, inTransaction, failed, unknown
    }

    // MARK: - Running statements

    /// The connection handle, or an error saying why there is none.
    func liveHandle() throws -> OpaquePointer {
        assert(thread.isCurrent, "libpq work must run on the connection's own thread")
        guard let handle else {
            throw PostgresError(.connectionClosed, message: "the connection is closed")
        }
        if PQstatus(handle) != CONNECTION_OK {
            markBroken()
            throw PostgresError(.connectionLost, message: "the connection to the server was lost",
                                hint: "Open a new connection (a pool replaces it for you).")
        }
        return handle
    }

    /// Runs one statement with the extended protocol and returns its complete result.
    func run(_ sql: String, _ bindings: PostgresBindings, format: PostgresFormat, token: CancelToken?,
             for stream: StreamState? = nil) throws -> QueryResult {
        let handle = try readyHandle(for: stream)
        let started = try begin(token, statement: sql, parameters: bindings.count)
        defer { end(token, statement: sql, since: started) }
        noteSending(sql, bindings)
        let sent = bindings.withUnsafeParameters { count, types, values, lengths, formats in
            PQsendQueryParams(handle, sql, count, types, values, lengths, formats, format.rawValue)
        }
        guard sent == 1 else { throw sendError(handle, statement: sql) }
        return try collectResult(handle, statement: sql, token: token)
    }

    /// Runs statements with the simple protocol (several may be separated by `;`).
    func runSimple(_ sql: String, token: CancelToken?, for stream: StreamState? = nil) throws -> [QueryResult] {
        let handle = try readyHandle(for: stream)
        let started = try begin(token, statement: sql, parameters: 0)
        defer { end(token, statement: sql, since: started) }
        noteSending(sql.utf8.count)
        guard PQsendQuery(handle, sql) == 1 else { throw sendError(handle, statement: sql) }
        var results: [QueryResult] = []
        var failure: PostgresError?
        while let result = PQgetResult(handle) {
            switch PQresultStatus(result) {
            case PGRES_FATAL_ERROR:
                if failure == nil { failure = makeError(result, statement: sql, token: token) }
                PQclear(result)
            case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
                PQclear(result)
                abandonCopy(handle)
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK:
                results.append(QueryResult(storage: ResultStorage(handle: result, statement: sql)))
            default:
                PQclear(result)
            }
        }
        if let failure { throw failure }
        return results
    }

    /// Reads every result of the statement just sent and returns the one with the rows.
    func collectResult(_ handle: OpaquePointer, statement: String, token: CancelToken?) throws -> QueryResult {
        var kept: OpaquePointer?
        var failure: PostgresError?
        while let result = PQgetResult(handle) {
            switch PQresultStatus(result) {
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
                if kept == nil { kept = result } else { PQclear(result) }
            case PGRES_FATAL_ERROR:
                if failure == nil { failure = makeError(result, statement: statement, token: token) }
                PQclear(result)
            case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
                PQclear(result)
                abandonCopy(handle)
                if failure == nil {
                    failure = PostgresError(.misuse, message: "COPY cannot run through query()",
                                            hint: "Use copyRows(into:columns:_:) for COPY FROM STDIN.", statement: statement)
                }
            default:
                PQclear(result)
            }
        }
        if let failure {
            if let kept { PQclear(kept) }
            throw failure
        }
        guard let kept else {
            throw PostgresError(.connectionLost, message: "the server sent no result", statement: statement)
        }
        return QueryResult(storage: ResultStorage(handle: kept, statement: statement))
    }

    private func abandonCopy(_ handle: OpaquePointer) {
        _ = PQputCopyEnd(handle, "COPY is not supported here")
        var buffer: UnsafeMutablePointer<CChar>?
        while PQgetCopyData(handle, &buffer, 0) > 0 { PQfreemem(buffer) }
    }

    /// Starts a statement: arms the cancel token and logs the text at `debug` (with the
    /// number of bind parameters, never their values). Returns when it started.
    func begin(_ token: CancelToken?, statement: @autoclosure () -> String, parameters: Int) throws -> ContinuousClock.Instant {
        if let token { try cancelHandle.beginStatement(token) }
        logger.debug("statement", metadata: ["db.query.text": "\(statement())", "db.query.parameter_count": "\(parameters)"])
        return .now
    }

    /// Ends a statement begun with ``begin(_:statement:parameters:)``, logging it at `notice`
    /// when it ran past the configuration's slow-statement threshold.
    func end(_ token: CancelToken?, statement: @autoclosure () -> String, since started: ContinuousClock.Instant) {
        end(token)
        if let threshold = configuration.slowStatementThreshold {
            let elapsed = started.duration(to: .now)
            if elapsed > threshold {
                logger.notice("slow statement", metadata: [
                    "db.query.text": "\(statement())", "duration": "\(elapsed)", "threshold": "\(threshold)"])
            }
        }
    }

    /// Begins a step of a statement already running on the server (a batch of a stream);
    /// see ``CancelHandle/resumeStatement(_:)``.
    func resume(_ token: CancelToken) {
        cancelHandle.resumeStatement(token)
    }

    /// Ends a step of a statement under way (a batch of a stream).
    func end(_ token: CancelToken?) {
        if token != nil { cancelHandle.endStatement() }
        refreshHealth()
        if notificationWaiter != nil { wakeNotificationWaiterIfQueued() }
    }

    /// Publishes what a pool needs to know after each statement.
    func refreshHealth() {
        guard let handle else { return }
        let broken = PQstatus(handle) != CONNECTION_OK
        let idle = PQtransactionStatus(handle) == PQTRANS_IDLE
        let streaming = activeStream != nil || readingAhead != nil
        health.withLock {
            $0.isBroken = broken
            $0.needsReset = !idle || streaming
        }
    }

    func markBroken() {
        health.withLock { $0.isBroken = true }
    }

    /// Messages larger than this (a statement's text and parameters, a chunk of COPY data)
    /// leave libpq's output buffer as large for the rest of the connection's life.
    public static let largeMessageBytes = 16 << 20

    /// Notes a message of `bytes` about to be sent (see ``Health/sentLargeMessage``).
    nonisolated func noteSending(_ bytes: Int) {
        if bytes > Self.largeMessageBytes { health.withLock { $0.sentLargeMessage = true } }
    }

    /// Notes a statement about to be sent with its parameters.
    nonisolated func noteSending(_ sql: String, _ bindings: PostgresBindings) {
        noteSending(sql.utf8.count + bindings.byteCount)
    }

    /// True once a message larger than ``largeMessageBytes`` was sent on this connection:
    /// libpq keeps a buffer of that size until the connection closes, and a pool closes it
    /// when it comes back rather than keep it idle.
    public nonisolated var holdsLargeBuffer: Bool { health.withLock { $0.sentLargeMessage } }

    func sendError(_ handle: OpaquePointer, statement: String) -> PostgresError {
        let message = configuration.redact(Self.trimmed(PQerrorMessage(handle)))
        if PQstatus(handle) != CONNECTION_OK {
            markBroken()
            return PostgresError(.connectionLost, message: "could not send the statement: \(message)", statement: statement)
        }
        return PostgresError(.misuse, message: "could not send the statement: \(message)", statement: statement)
    }

    /// Turns a failed `PGresult` into a ``PostgresError`` with every field the server sent.
    func makeError(_ result: OpaquePointer, statement: String?, token: CancelToken?) -> PostgresError {
        func field(_ code: Character) -> String? {
            guard let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        let sqlState = field("C").map(SQLState.init(rawValue:))
        let severity = field("V") ?? field("S")
        // The server says FATAL (terminated backend, shutdown) before libpq sees the socket close.
        let lost = handle.map { PQstatus($0) != CONNECTION_OK } ?? true
            || severity == "FATAL" || severity == "PANIC"
            || sqlState?.errorClass == "08" || sqlState.map { $0.rawValue.hasPrefix("57P0") } == true
        var kind: PostgresError.Kind = .server
        if lost {
            kind = .connectionLost
            markBroken()
        } else if sqlState == .queryCanceled {
            switch token?.cancellationReason {
            case .timeout: kind = .timedOut
            case .task, .explicit: kind = .canceled
            case nil: kind = (field("M") ?? "").contains("statement timeout") ? .timedOut : .canceled
            }
        }
        let primary = field("M") ?? Self.trimmed(PQresultErrorMessage(result))
        var error = PostgresError(kind, message: configuration.redact(primary), sqlState: sqlState,
                                  detail: field("D").map(configuration.redact), hint: field("H"), statement: statement)
        if lost && sqlState == nil {
            error.message = "the connection to the server was lost: \(error.message)"
        }
        if kind == .timedOut, token?.cancellationReason == .timeout {
            error.message = "the statement ran past its timeout and was canceled (\(error.message))"
        }
        error.severity = severity
        error.position = field("P").flatMap { Int($0) }
        error.context = field("W")
        error.schemaName = field("s")
        error.tableName = field("t")
        error.columnName = field("c")
        error.dataTypeName = field("d")
        error.constraintName = field("n")
        return error
    }

    static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown error" }
        return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func connectionHint(for reason: String) -> String? {
        if reason.contains("Connection refused") || reason.contains("No such file or directory") {
            return "Is the server running, and listening on that host and port (or socket directory)?"
        }
        if reason.contains("password authentication failed") || reason.contains("no password supplied") {
            return "Check the user name and password."
        }
        if reason.contains("could not translate host name") {
            return "Check the host name."
        }
        if reason.contains("does not exist") {
            return "Check the database and role names, or create them."
        }
        return nil
    }
}

/// Receives the server's notices (warnings, `RAISE NOTICE`) and logs them.
final class NoticeBox: @unchecked Sendable {
    let logger: Logger
    init(logger: Logger) { self.logger = logger }

    func receive(_ result: OpaquePointer) {
        let severity = PQresultErrorField(result, Int32(Character("V").asciiValue!)).map { String(cString: $0) } ?? "NOTICE"
        let message = PQresultErrorField(result, Int32(Character("M").asciiValue!)).map { String(cString: $0) } ?? ""
        switch severity {
        case "WARNING": logger.warning("\(message)", metadata: ["severity": "\(severity)"])
        case "DEBUG", "LOG": logger.debug("\(message)", metadata: ["severity": "\(severity)"])
        default: logger.info("\(message)", metadata: ["severity": "\(severity)"])
        }
    }
}
