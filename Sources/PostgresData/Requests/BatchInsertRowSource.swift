import PostgresClient
import Synchronization

/// Rows a batch insert's handler makes when the request executes, written straight into
/// `COPY` as the handler returns each one (Core Data calls `dictionaryHandler` and
/// `managedObjectHandler` during `execute(_:)` too).
protocol BatchInsertRowSource: Sendable {
    /// Calls the handler until it returns true, writing each row to `writer` as a COPY row of
    /// every writable column of `entity`. A row that breaks the model throws, which aborts
    /// the COPY: no row is written.
    func write(_ entity: EntityDescription, to writer: inout CopyWriter) throws
}

/// A handler given to a batch insert, run by one execution at a time: a lock tried, never
/// waited for, so a copy of the request executing meanwhile fails instead of calling the
/// handler concurrently.
final class HandlerSlot<Handler>: Sendable {
    private let handler: Mutex<Handler>

    init(_ handler: sending Handler) {
        self.handler = Mutex(handler)
    }

    func withHandler<Result: Sendable>(_ entity: EntityDescription, _ body: (Handler) throws -> Result) throws -> Result {
        guard let result = try handler.withLockIfAvailable({ handler in try body(handler) }) else {
            throw PostgresDataError.invalidRequest("batch insert of \(entity.name): its handler is already running in another execution of this request; execute one at a time, or make a request per execution")
        }
        return result
    }
}
