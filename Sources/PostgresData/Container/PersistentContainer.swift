import Foundation
import Logging
import PostgresClient

/// Everything an app needs in one object: the model, the coordinator and its store, a
/// main-queue context, and background contexts on demand.
///
/// Core Data equivalent: `NSPersistentContainer`.
///
/// ```swift
/// let container = PersistentContainer(name: "Todo", model: ManagedObjectModel(Item.self, TodoList.self))
/// try await container.loadPersistentStores()          // $DATABASE_URL
/// try await container.performBackgroundTask { context in
///     _ = Item(context: context)
///     try context.save()
/// }
/// ```
public final class PersistentContainer: Sendable {
    /// The container's name (for logs).
    public let name: String
    /// The model of the stored objects.
    public let managedObjectModel: ManagedObjectModel
    /// The coordinator shared by every context of the container.
    public let persistentStoreCoordinator: PersistentStoreCoordinator
    /// The main-queue context, for work tied to the main actor.
    public let viewContext: ManagedObjectContext

    /// A container for `model`; load its store before use. `logger` is the one every part
    /// of the store logs to: its pool (connections opened and closed, at `info`), its
    /// statements (at `debug`, and slow ones at `notice`: see
    /// `Configuration.slowStatementThreshold`), the remote-change listener.
    public init(name: String, model: ManagedObjectModel, logger: Logger = Logger(label: "PostgresData")) {
        self.name = name
        self.managedObjectModel = model
        self.persistentStoreCoordinator = PersistentStoreCoordinator(managedObjectModel: model, logger: logger)
        self.viewContext = ManagedObjectContext(concurrencyType: .mainQueue, coordinator: persistentStoreCoordinator)
        viewContext.name = "\(name).viewContext"
    }

    /// Connects to the database at `url`, or at `$DATABASE_URL` when nil, and checks that the
    /// schema matches the model (``PersistentStoreCoordinator/StoreOptions/createSchemaIfMissing``
    /// creates it for development and tests).
    ///
    /// Core Data equivalent: `loadPersistentStores(completionHandler:)`.
    public func loadPersistentStores(url: String? = nil,
                                     options: PersistentStoreCoordinator.StoreOptions = .init()) async throws {
        if let url {
            try await persistentStoreCoordinator.addPersistentStore(url: url, options: options)
            return
        }
        let configuration: Configuration?
        do {
            configuration = try Configuration.fromEnvironment()
        } catch let error as PostgresError {
            throw PostgresDataError.database(error)
        }
        guard let configuration else {
            throw PostgresDataError.invalidRequest("no store URL given and DATABASE_URL is not set; pass url: \"postgres://user@host/database\"")
        }
        try await persistentStoreCoordinator.addPersistentStore(configuration: configuration, options: options)
    }

    /// Connects to the database `configuration` describes.
    public func loadPersistentStores(configuration: Configuration,
                                     options: PersistentStoreCoordinator.StoreOptions = .init()) async throws {
        try await persistentStoreCoordinator.addPersistentStore(configuration: configuration, options: options)
    }

    /// A new private-queue context on the container's coordinator.
    public func newBackgroundContext() -> ManagedObjectContext {
        ManagedObjectContext(concurrencyType: .privateQueue, coordinator: persistentStoreCoordinator)
    }

    /// A new private-queue context that only reads: its fetches and faults run on the read
    /// replica when the store has one
    /// (``PersistentStoreCoordinator/StoreOptions/readReplicaConfiguration``), and it cannot
    /// save. See ``ManagedObjectContext/isReadOnly``.
    ///
    /// No Core Data equivalent.
    public func newReadOnlyContext() -> ManagedObjectContext {
        ManagedObjectContext(concurrencyType: .privateQueue, coordinator: persistentStoreCoordinator, readOnly: true)
    }

    /// Runs `block` on a new private-queue context and returns its result.
    ///
    /// Core Data equivalent: `performBackgroundTask(_:)`.
    public func performBackgroundTask<T: Sendable, E: Error>(
        _ block: @escaping @Sendable (ManagedObjectContext) throws(E) -> T
    ) async throws(E) -> T {
        let context = newBackgroundContext()
        return try await context.perform { () throws(E) -> T in try block(context) }
    }
}
