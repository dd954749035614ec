import CoreMetrics
import Foundation
import PostgresClient

/// A loaded store's swift-metrics instruments, named after OpenTelemetry's database client
/// conventions where one exists (`db.client.operation.duration`,
/// `db.client.response.returned_rows`) and `postgresdata.*` otherwise; every one carries
/// `db.system.name` = `postgresql` and the database as `db.namespace`.
///
/// Created when the store loads, with the factory current then (`MetricsSystem.factory`: the
/// bootstrapped backend, or one a test bound with `withMetricsFactory`).
final class StoreMetrics: Sendable {
    private let factory: any MetricsFactory
    private let base: [(String, String)]
    private let instruments = Locked<[Key: AnyObject]>([:])

    /// An instrument's label and dimension values (strings the model or the code holds
    /// already: building a key allocates nothing).
    private struct Key: Hashable {
        var label: String
        var first: String
        var second: String
        var third: String = ""
    }

    init(namespace: String, factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        self.base = [("db.system.name", "postgresql"), ("db.namespace", namespace)]
    }

    /// How long an operation took, failed ones included (`error.type` tells them apart).
    func recordDuration(_ operation: StoreOperation, collection: String?, failed error: (any Error)?, _ duration: Duration) {
        let errorType = error.map(Self.errorType) ?? ""
        let timer = instrument(Key(label: "db.client.operation.duration", first: operation.rawValue, second: collection ?? "", third: errorType)) {
            var dimensions = base + [("db.operation.name", operation.rawValue)]
            if let collection { dimensions.append(("db.collection.name", collection)) }
            if !errorType.isEmpty { dimensions.append(("error.type", errorType)) }
            return Timer(label: "db.client.operation.duration", dimensions: dimensions, factory: factory)
        }
        timer.record(duration)
    }

    /// Rows a fetch returned.
    func recordReturnedRows(_ count: Int, collection: String) {
        let recorder = instrument(Key(label: "db.client.response.returned_rows", first: collection, second: "")) {
            Recorder(label: "db.client.response.returned_rows",
                     dimensions: base + [("db.operation.name", StoreOperation.fetch.rawValue), ("db.collection.name", collection)],
                     aggregate: true, factory: factory)
        }
        recorder.record(count)
    }

    /// Rows a save or batch request wrote, by kind (`insert`, `update`, `delete`).
    func recordWrittenRows(_ count: Int, kind: String, collection: String) {
        guard count > 0 else { return }
        counter("postgresdata.rows.written", [("db.operation.name", kind), ("db.collection.name", collection)]).increment(by: count)
    }

    /// Objects a save found changed underneath (handed to the merge policy).
    func recordConflicts(_ count: Int, collection: String) {
        guard count > 0 else { return }
        counter("postgresdata.save.conflicts", [("db.collection.name", collection)]).increment(by: count)
    }

    /// A unit of work run again by `perform(retryingUpTo:)`, by the error that caused it.
    func recordRetry(after error: any Error) {
        counter("postgresdata.perform.retries", [("error.type", Self.errorType(error))]).increment()
    }

    /// How long after another process wrote a transaction (its history timestamp, the
    /// server's clock) this process merged it.
    func recordRemoteChangeLag(_ duration: Duration) {
        instrument(Key(label: "postgresdata.remote_change.lag", first: "", second: "")) {
            Timer(label: "postgresdata.remote_change.lag", dimensions: base, factory: factory)
        }.record(duration)
    }

    private func counter(_ label: String, _ dimensions: [(String, String)]) -> Counter {
        instrument(Key(label: label, first: dimensions.first?.1 ?? "", second: dimensions.dropFirst().first?.1 ?? "")) {
            Counter(label: label, dimensions: base + dimensions, factory: factory)
        }
    }

    private func instrument<Instrument: AnyObject>(_ key: Key, make: () -> Instrument) -> Instrument {
        instruments.withLock { instruments in
            if let found = instruments[key] as? Instrument { return found }
            let made = make()
            instruments[key] = made
            return made
        }
    }

    /// `error.type` as OpenTelemetry asks: the SQLSTATE of a server error, else a short
    /// name of the failure.
    static func errorType(_ error: any Error) -> String {
        switch error {
        case let error as PostgresDataError:
            switch error {
            case .database(let underlying), .commitOutcomeUnknown(let underlying):
                return underlying.sqlState?.rawValue ?? "\(underlying.kind)"
            case .constraintViolation(_, _, let underlying): return underlying.sqlState?.rawValue ?? "constraint_violation"
            case .mergeConflict: return "merge_conflict"
            case .constraintConflict: return error.sqlState ?? "constraint_conflict"
            case .validation: return "validation"
            case .shuttingDown: return "shutting_down"
            case .queryGenerationEnded: return "query_generation_ended"
            default: return "invalid_request"
            }
        case let error as PostgresError: return error.sqlState?.rawValue ?? "\(error.kind)"
        case is CancellationError: return "cancelled"
        default: return "\(type(of: error))"
        }
    }
}
