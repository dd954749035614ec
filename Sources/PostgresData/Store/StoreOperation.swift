import PostgresClient
import Tracing

/// An operation a context runs against the store, as traces and metrics name it
/// (`db.operation.name`).
enum StoreOperation: String, Sendable {
    case fetch
    case count
    case save
    case batchInsert = "batch_insert"
    case batchUpdate = "batch_update"
    case batchDelete = "batch_delete"
    case asynchronousFetch = "asynchronous_fetch"

    /// Runs `body` inside a client span named `fetch Item` (the operation and the entity), a
    /// child of the caller's span, with OpenTelemetry's database attributes; records the
    /// operation's duration in `metrics`. The span's error is the one `body` throws.
    func traced<T>(entity: EntityDescription?, store: PersistentStoreCoordinator.LoadedStore?,
                   _ body: (any Span) async throws -> T) async throws -> T {
        let started = ContinuousClock.now
        let collection = entity?.tableName
        do {
            let result = try await withSpan(entity.map { "\(rawValue) \($0.name)" } ?? rawValue, ofKind: .client) { span in
                if span.isRecording {
                    span.attributes["db.system"] = "postgresql"
                    span.attributes["db.system.name"] = "postgresql"
                    span.attributes["db.operation.name"] = rawValue
                    if let collection { span.attributes["db.collection.name"] = collection }
                    if let store {
                        span.attributes["db.namespace"] = store.namespace
                        if let host = store.pool.configuration.host, !host.hasPrefix("/") {
                            span.attributes["server.address"] = host
                            span.attributes["server.port"] = store.pool.configuration.port ?? 5432
                        }
                    }
                }
                do {
                    return try await body(span)
                } catch {
                    if span.isRecording {
                        span.attributes["error.type"] = StoreMetrics.errorType(error)
                        if let state = (error as? PostgresDataError)?.sqlState { span.attributes["db.response.status_code"] = state }
                        span.setStatus(SpanStatus(code: .error))
                    }
                    throw error
                }
            }
            store?.metrics.recordDuration(self, collection: collection, failed: nil, started.duration(to: .now))
            return result
        } catch {
            store?.metrics.recordDuration(self, collection: collection, failed: error, started.duration(to: .now))
            throw error
        }
    }
}

extension Span {
    /// Sets `db.query.text` (statements carry their values as bind parameters, so the text
    /// holds none) unless a first statement already set it.
    func noteQuery(_ sql: @autoclosure () -> String) {
        guard isRecording, attributes["db.query.text"] == nil else { return }
        attributes["db.query.text"] = sql()
    }
}
