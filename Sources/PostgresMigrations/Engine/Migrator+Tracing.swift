import PostgresClient
import Tracing

extension Migrator {
    /// Runs `body` in a client span with the database attributes, and those of `migration`
    /// when there is one.
    func traced<T>(_ name: String, _ migration: Migration? = nil, _ body: (any Span) async throws -> T) async throws -> T {
        try await withSpan(name, ofKind: .client) { span in
            if span.isRecording {
                span.attributes["db.system"] = "postgresql"
                span.attributes["db.system.name"] = "postgresql"
                span.attributes["db.operation.name"] = name.split(separator: " ").first.map(String.init) ?? name
                if let database = configuration.database { span.attributes["db.namespace"] = database }
                if let migration {
                    span.attributes["postgresdata.migration.version"] = "\(migration.version)"
                    span.attributes["postgresdata.migration.name"] = migration.name
                    span.attributes["postgresdata.migration.transactional"] = migration.isTransactional
                }
            }
            return try await body(span)
        }
    }
}
