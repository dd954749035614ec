extension ManagedObjectContext {
    /// Fetches or deletes persistent history.
    ///
    /// Core Data equivalent: `execute(_:)` with an `NSPersistentHistoryChangeRequest`. Call
    /// it from anywhere: it does not use this context's queue or objects. The store must be
    /// loaded with ``PersistentStoreCoordinator/StoreOptions/persistentHistoryTracking``.
    public func execute(_ request: PersistentHistoryChangeRequest) async throws -> PersistentHistoryResult {
        try await persistentStoreCoordinator.execute(request)
    }

    /// Fetches or deletes persistent history from this context's queue, blocking it until done.
    public func execute(_ request: PersistentHistoryChangeRequest) throws -> PersistentHistoryResult {
        let coordinator = persistentStoreCoordinator
        return try blockingStore { _ in try await coordinator.execute(request) }
    }
}
