import Logging
import PostgresData
import ServiceLifecycle

/// A loaded ``PersistentContainer`` as a swift-service-lifecycle `Service`: run it in the
/// server's `ServiceGroup` beside the HTTP server, and a graceful shutdown (SIGTERM in a
/// deploy) ends it without cutting a unit of work.
///
/// ```swift
/// let container = PersistentContainer(name: "Todo", model: model)
/// try await container.loadPersistentStores(url: databaseURL)
/// let group = ServiceGroup(services: [PersistentContainerService(container), httpServer],
///                          gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// `run()` keeps the store (its connection pool, its remote-change listener) until graceful
/// shutdown. Then the store drains: a new ``ManagedObjectContext/perform(_:)`` block throws
/// ``PostgresDataError/shuttingDown``, blocks under way run to their end (their saves commit
/// or throw), for at most ``drainTimeout``; then the pool and the listener close. Cancelled
/// instead (the group's cancellation), it closes at once: connections in use are closed
/// under the units of work, which fail with a connection error.
///
/// Core Data has no equivalent: an app's store lives as long as the app.
public struct PersistentContainerService: Service {
    /// The container this service runs.
    public let container: PersistentContainer
    /// How long a graceful shutdown waits for the units of work under way.
    public var drainTimeout: Duration
    let logger: Logger

    /// A service for `container`, whose stores are loaded already.
    public init(_ container: PersistentContainer, drainTimeout: Duration = .seconds(30),
                logger: Logger = Logger(label: "PostgresData.service")) {
        self.container = container
        self.drainTimeout = drainTimeout
        self.logger = logger
    }

    /// Runs until graceful shutdown or cancellation, then closes the store as described above.
    public func run() async throws {
        let coordinator = container.persistentStoreCoordinator
        do {
            try await gracefulShutdown()
        } catch {
            logger.info("cancelled: closing the store at once")
            await coordinator.close()
            return
        }
        logger.info("graceful shutdown: new units of work are refused; waiting for those under way")
        let remaining = await coordinator.drain(timeout: drainTimeout)
        if remaining > 0 {
            logger.warning("\(remaining) units of work were still under way after \(drainTimeout); closing the store under them")
        }
        await coordinator.close()
        logger.info("store closed")
    }
}
