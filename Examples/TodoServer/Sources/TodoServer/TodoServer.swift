import Foundation
import Hummingbird
import Logging
import PostgresClient
import PostgresData
import PostgresDataLifecycle
import PostgresMigrations
import TodoExample

/// What the to-do server needs: a database, the migrations folder, an address.
public struct TodoServerConfiguration: Sendable {
    /// The database (its migrations are applied at start-up).
    public var database: Configuration
    /// The folder of the migrations to apply (the repository's `migrations/`).
    public var migrationsPath: String
    /// Where the server listens.
    public var host: String
    public var port: Int
    /// The most connections the store opens.
    public var maximumConnections: Int
    public var logger: Logger

    public init(database: Configuration, migrationsPath: String, host: String = "127.0.0.1", port: Int = 8080,
                maximumConnections: Int = 8, logger: Logger = Logger(label: "todo-server")) {
        self.database = database
        self.migrationsPath = migrationsPath
        self.host = host
        self.port = port
        self.maximumConnections = maximumConnections
        self.logger = logger
    }
}

/// The to-do server: applies the migrations, loads the store (with persistent history, so
/// that other processes' saves reach the live endpoint), and returns the application, whose
/// service group runs the HTTP server and the store. A graceful shutdown (SIGTERM) stops
/// new requests, lets the units of work under way commit or fail, then closes the store.
public func buildApplication(_ configuration: TodoServerConfiguration) async throws -> some ApplicationProtocol {
    let logger = configuration.logger
    let migrator = Migrator(configuration: configuration.database,
                            directory: try MigrationDirectory(path: configuration.migrationsPath))
    let applied = try await migrator.up()
    logger.info("migrations applied", metadata: ["count": "\(applied.count)"])

    let container = PersistentContainer(name: "Todo", model: todoModel, logger: logger)
    try await container.loadPersistentStores(configuration: configuration.database, options: .init(
        maximumConnections: configuration.maximumConnections, persistentHistoryTracking: true))

    let router = Router()
    router.addMiddleware { LogRequestsMiddleware(.debug) }
    router.get("health") { _, _ in "ok" }
    ItemController(container: container).addRoutes(to: router.group("items"))
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "todo-server"),
        services: [PersistentContainerService(container, logger: logger)],
        logger: logger)
}
