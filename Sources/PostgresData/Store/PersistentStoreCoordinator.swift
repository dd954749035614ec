import Foundation
import Logging
import PostgresClient

/// Connects a model to a PostgreSQL database; shared by every context of an app, on every
/// thread.
///
/// Core Data equivalent: `NSPersistentStoreCoordinator`. It owns the connection pool and a
/// row cache of snapshots with their row versions; contexts lease a connection per request
/// (a fetch, a fault, a save) and give it back at once.
public final class PersistentStoreCoordinator: Sendable {
    /// The model of the objects stored.
    public let managedObjectModel: ManagedObjectModel
    let rowCache = RowCache()
    let logger: Logger

    struct LoadedStore: Sendable {
        var pool: ConnectionPool
        /// The identity sequence of each entity, by model index.
        var sequences: [String]
        var constraints: [String: SchemaConstraint]
        var saveIsolation: TransactionOptions.IsolationLevel
    }

    private let store = Locked<LoadedStore?>(nil)
    private let requests = Locked<Int>(0)
    private let observers = Locked<[ManagedObjectContextBox]>([])

    /// A coordinator for `model`; add a store before using it.
    public init(managedObjectModel: ManagedObjectModel, logger: Logger = Logger(label: "PostgresData")) {
        self.managedObjectModel = managedObjectModel
        self.logger = logger
    }

    /// Options for loading a store.
    public struct StoreOptions: Sendable {
        /// Create the tables the model needs when none of them exist (development, tests,
        /// demos). Production schemas come from migrations; a schema that exists but differs
        /// from the model is always an error listing the differences.
        public var createSchemaIfMissing: Bool
        /// The most connections the store's pool opens.
        public var maximumConnections: Int
        /// How long a request waits for a free connection.
        public var leaseTimeout: Duration
        /// The isolation level of a save's transaction. Read committed (the default) is
        /// enough for the version checks to catch every conflicting write; `.serializable`
        /// also refuses a save whose rows changed while it ran with SQLSTATE 40001, a
        /// ``PostgresDataError/isRetryable`` error to retry with
        /// ``ManagedObjectContext/perform(retryingUpTo:_:)``.
        public var saveIsolation: TransactionOptions.IsolationLevel

        /// Options; the defaults check the schema, open at most 8 connections and save in read committed.
        public init(createSchemaIfMissing: Bool = false, maximumConnections: Int = 8, leaseTimeout: Duration = .seconds(30),
                    saveIsolation: TransactionOptions.IsolationLevel = .readCommitted) {
            self.createSchemaIfMissing = createSchemaIfMissing
            self.maximumConnections = maximumConnections
            self.leaseTimeout = leaseTimeout
            self.saveIsolation = saveIsolation
        }
    }

    /// Connects to the database, checks that its schema matches the model (creating it when
    /// allowed), and makes the store available to contexts.
    ///
    /// Core Data equivalent: `addPersistentStore(type:configuration:at:options:)`.
    public func addPersistentStore(configuration: Configuration, options: StoreOptions = StoreOptions()) async throws {
        guard managedObjectModel.problems.isEmpty else { throw PostgresDataError.invalidModel(managedObjectModel.problems) }
        let pool = ConnectionPool(configuration: configuration, maximumConnections: options.maximumConnections,
                                  leaseTimeout: options.leaseTimeout, logger: logger)
        do {
            let sequences = try await pool.withConnection { connection in
                try await SchemaCheck(model: managedObjectModel).prepare(connection, create: options.createSchemaIfMissing)
            }
            store.withLock {
                $0 = LoadedStore(pool: pool, sequences: sequences, constraints: managedObjectModel.schemaConstraints,
                                 saveIsolation: options.saveIsolation)
            }
        } catch {
            await pool.shutdown()
            throw Self.wrap(error)
        }
    }

    /// Connects to the database at `url` (`postgres://user@host/db`).
    public func addPersistentStore(url: String, options: StoreOptions = StoreOptions()) async throws {
        do {
            try await addPersistentStore(configuration: Configuration(url: url), options: options)
        } catch let error as PostgresError {
            throw PostgresDataError.database(error)
        }
    }

    /// True once a store is loaded.
    public var isLoaded: Bool { store.withLock { $0 != nil } }

    /// Closes the store's connections; contexts can no longer reach the database.
    public func close() async {
        let loaded = store.withLock { store -> LoadedStore? in
            defer { store = nil }
            return store
        }
        await loaded?.pool.shutdown()
    }

    /// The connection pool of the loaded store, for SQL of your own beside the object graph.
    public var connectionPool: ConnectionPool {
        get throws {
            guard let pool = store.withLock({ $0?.pool }) else { throw PostgresDataError.storeNotLoaded }
            return pool
        }
    }

    /// The object ID named by a URI from ``ManagedObjectID/uriRepresentation()``, or nil
    /// when it names no entity of the model or a temporary ID.
    ///
    /// Core Data equivalent: `managedObjectID(forURIRepresentation:)`.
    public func managedObjectID(forURIRepresentation uri: URL) -> ManagedObjectID? {
        guard uri.scheme == "x-postgresdata", let entityName = uri.host,
              let entity = managedObjectModel.entitiesByName[entityName] else { return nil }
        let last = uri.lastPathComponent
        guard last.first == "p", let key = Int64(last.dropFirst()) else { return nil }
        return ManagedObjectID(entity: entity, primaryKey: key)
    }

    func loaded() throws -> LoadedStore {
        guard let loaded = store.withLock({ $0 }) else { throw PostgresDataError.storeNotLoaded }
        return loaded
    }

    /// How many requests (fetches, faults filled, key allocations, saves) reached the
    /// database so far: a way to see that faults fill lazily and saves batch.
    public var requestCount: Int { requests.withLock { $0 } }

    /// Runs `body` with a pooled connection, translating errors.
    func withConnection<T: Sendable>(_ body: (Connection) async throws -> T) async throws -> T {
        let loaded = try loaded()
        requests.withLock { $0 += 1 }
        do {
            return try await loaded.pool.withConnection(body)
        } catch {
            throw Self.wrap(error, constraints: loaded.constraints)
        }
    }

    static func wrap(_ error: any Error, constraints: [String: SchemaConstraint] = [:]) -> any Error {
        guard let error = error as? PostgresError else { return error }
        if let name = error.constraintName, error.sqlState?.errorClass == "23" {
            return PostgresDataError.constraintViolation(constraint: constraints[name], name: name, underlying: error)
        }
        return PostgresDataError.database(error)
    }

    // MARK: Contexts that merge saves automatically

    func register(_ context: ManagedObjectContext) {
        observers.withLock { observers in
            observers.removeAll { $0.context == nil }
            observers.append(ManagedObjectContextBox(context))
        }
    }

    /// Tells the other root contexts of this coordinator about a save; those that merge
    /// automatically refresh from it.
    func didSave(_ payload: ContextDidSave, from source: ManagedObjectContext) {
        let contexts = observers.withLock { $0.compactMap(\.context) }
        for context in contexts where context !== source && context.parent == nil && context.automaticallyMergesChangesFromParent {
            context.enqueueMerge(payload)
        }
    }
}
