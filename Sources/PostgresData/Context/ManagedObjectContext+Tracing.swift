import Tracing

extension ManagedObjectContext {
    /// Runs an operation of the context's queue (a fetch, a count, a save) inside its span
    /// and duration metric; the statements it sends describe the span (``activeSpan``).
    func traced<T>(_ operation: StoreOperation, entity: EntityDescription?, _ body: () async throws -> T) async throws -> T {
        let store = try? persistentStoreCoordinator.loaded()
        return try await operation.traced(entity: entity, store: store) { span in
            let (outerSpan, outerMetrics) = (activeSpan, activeMetrics)
            (activeSpan, activeMetrics) = (span, store?.metrics)
            defer { (activeSpan, activeMetrics) = (outerSpan, outerMetrics) }
            return try await body()
        }
    }

    /// Notes the rows a fetch returned on its span and in the store's metrics.
    func noteReturnedRows(_ count: Int, entity: EntityDescription) {
        if let span = activeSpan, span.isRecording { span.attributes["db.response.returned_rows"] = count }
        activeMetrics?.recordReturnedRows(count, collection: entity.tableName)
    }
}
