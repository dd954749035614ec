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
    /// Committed rows shared by the contexts; changed only through the methods below.
    private let rowCache = RowCache()
    let logger: Logger

    struct LoadedStore: Sendable {
        var pool: ConnectionPool
        /// The identity sequence of each entity, by model index.
        var sequences: [String]
        var constraints: [String: SchemaConstraint]
        var saveIsolation: TransactionOptions.IsolationLevel
        var tracksHistory: Bool
        var listener: RemoteChangeListener?
        var replica: ReadReplica?
        /// The database's name (`db.namespace` in traces and metrics).
        var namespace: String
        var metrics: StoreMetrics
    }

    private let store = Locked<LoadedStore?>(nil)
    let requests = Locked<Int>(0)
    /// The root contexts that merge changes automatically, held weakly: only they are told
    /// about saves, so a context per request that does not merge costs no one anything.
    private let mergingContexts = Locked<[ObjectIdentifier: ManagedObjectContextBox]>([:])
    /// The query generations alive (each holds a connection until it ends).
    let generations = GenerationRegistry()
    /// The WAL position after the latest commit of this coordinator (tracked with a replica).
    let lastCommitPosition = Locked<WALPosition?>(nil)
    let remoteChangeHub = RemoteChangeHub()
    /// Units of work (context blocks) under way, and whether new ones are refused.
    let unitsInFlight = Locked(UnitsInFlight())

    /// Identifies this coordinator in the persistent history it writes, so that its own
    /// saves are not merged back into its contexts as remote changes.
    public let instanceID = UUID()

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
        /// Record every save and batch request in the store's persistent history, in the
        /// same transaction (off by default). The history tables are created when missing.
        ///
        /// Core Data equivalent: `NSPersistentHistoryTrackingKey`.
        public var persistentHistoryTracking: Bool
        /// With history tracking, listen for other processes' saves (`LISTEN` on one
        /// dedicated connection), read their history, and merge it into the contexts that
        /// merge automatically; see ``PersistentStoreCoordinator/remoteChanges()``. On by default.
        ///
        /// Core Data equivalent: `NSPersistentStoreRemoteChangeNotificationPostOptionKey`.
        public var remoteChangeNotifications: Bool
        /// Where remote changes start: the token a previous run of the process kept
        /// (``PersistentStoreCoordinator/lastRemoteChangeToken``), so that a restarted process
        /// catches up with what it missed. Nil: from the moment the store loads.
        public var remoteChangesStartToken: PersistentHistoryToken?
        /// The server the remote-change listener connects to, when it must differ from the
        /// store's (behind PgBouncer in transaction mode, `LISTEN` needs a direct connection).
        public var listenerConfiguration: Configuration?
        /// A streaming replica (a physical standby of the store's server) that serves the
        /// reads of read-only contexts and of fetch requests that allow it; see
        /// ``ManagedObjectContext/isReadOnly`` and ``FetchRequest/allowsReadingFromReplica``.
        /// Saves and batch requests always go to the store's server. Its pool opens at most
        /// ``maximumConnections`` connections too.
        ///
        /// No Core Data equivalent.
        public var readReplicaConfiguration: Configuration?
        /// Set by a staged migration's custom step: the model's required columns may still
        /// allow NULL when the store loads.
        package var allowsPendingNotNull = false

        /// Options; the defaults check the schema, open at most 8 connections, save in read
        /// committed, keep no history and read from no replica.
        public init(createSchemaIfMissing: Bool = false, maximumConnections: Int = 8, leaseTimeout: Duration = .seconds(30),
                    saveIsolation: TransactionOptions.IsolationLevel = .readCommitted, persistentHistoryTracking: Bool = false,
                    remoteChangeNotifications: Bool = true, remoteChangesStartToken: PersistentHistoryToken? = nil,
                    listenerConfiguration: Configuration? = nil, readReplicaConfiguration: Configuration? = nil) {
            self.createSchemaIfMissing = createSchemaIfMissing
            self.maximumConnections = maximumConnections
            self.leaseTimeout = leaseTimeout
            self.saveIsolation = saveIsolation
            self.persistentHistoryTracking = persistentHistoryTracking
            self.remoteChangeNotifications = remoteChangeNotifications
            self.remoteChangesStartToken = remoteChangesStartToken
            self.listenerConfiguration = listenerConfiguration
            self.readReplicaConfiguration = readReplicaConfiguration
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
        let namespace = configuration.database ?? configuration.user ?? ""
        var replica: ReadReplica?
        do {
            let (sequences, start) = try await pool.withConnection(resettingSession: false) { connection in
                let check = SchemaCheck(model: managedObjectModel, allowsPendingNotNull: options.allowsPendingNotNull)
                let sequences = try await check.prepare(connection, create: options.createSchemaIfMissing)
                guard options.persistentHistoryTracking else { return (sequences, PersistentHistoryToken?.none) }
                try await HistorySchema.prepare(connection)
                let now = try await connection.query("SELECT pg_current_snapshot()::text")[0].decode(String.self, at: 0)
                return (sequences, options.remoteChangesStartToken ?? PersistentHistoryToken(snapshot: now))
            }
            if let replicaConfiguration = options.readReplicaConfiguration {
                replica = try await ReadReplica.open(configuration: replicaConfiguration, primary: pool,
                                                     maximumConnections: options.maximumConnections,
                                                     leaseTimeout: options.leaseTimeout, logger: logger)
            }
            var listener: RemoteChangeListener?
            if let start, options.remoteChangeNotifications {
                listener = RemoteChangeListener(
                    configuration: options.listenerConfiguration ?? configuration, model: managedObjectModel, instanceID: instanceID,
                    start: start, logger: logger) { [weak self] result in self?.mergeRemoteChanges(result) }
                try await listener?.start()
            }
            store.withLock {
                $0 = LoadedStore(pool: pool, sequences: sequences, constraints: managedObjectModel.schemaConstraints,
                                 saveIsolation: options.saveIsolation, tracksHistory: options.persistentHistoryTracking,
                                 listener: listener, replica: replica, namespace: namespace,
                                 metrics: StoreMetrics(namespace: namespace))
            }
        } catch {
            await replica?.pool.shutdown()
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
        await loaded?.listener?.stop()
        for generation in generations.live {
            await generation.end(.queryGenerationEnded("the store was closed"))
        }
        await loaded?.replica?.pool.shutdown()
        await loaded?.pool.shutdown()
        remoteChangeHub.finish()
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
        managedObjectModel.managedObjectID(forURIRepresentation: uri)
    }

    /// The object ID of the row of `type` whose primary key is `primaryKey` (a key from a URL
    /// path, say), or nil when the model has no entity for the class. Whether the row exists
    /// is known on use: ``ManagedObjectContext/existingObject(with:)-5tqle`` throws
    /// ``PostgresDataError/objectNotFound(_:)`` when it does not.
    ///
    /// Core Data has no equivalent: its IDs are opaque; PostgreSQL rows have keys.
    public func managedObjectID<Entity: ManagedObject>(for type: Entity.Type, primaryKey: Int64) -> ManagedObjectID? {
        managedObjectModel.entity(for: type).map { ManagedObjectID(entity: $0, primaryKey: primaryKey) }
    }

    /// The object ID of the row of the entity named `entityName` whose primary key is
    /// `primaryKey`, or nil when the model has no such entity; see
    /// ``managedObjectID(for:primaryKey:)``.
    public func managedObjectID(entityName: String, primaryKey: Int64) -> ManagedObjectID? {
        managedObjectModel.entitiesByName[entityName].map { ManagedObjectID(entity: $0, primaryKey: primaryKey) }
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
        try await withConnection(of: try loaded(), body)
    }

    /// Runs `body` with a connection of `loaded`'s primary pool (the store already looked up).
    func withConnection<T: Sendable>(of loaded: LoadedStore, _ body: (Connection) async throws -> T) async throws -> T {
        requests.withLock { $0 += 1 }
        do {
            return try await loaded.pool.withConnection(resettingSession: false, body)
        } catch {
            throw Self.wrap(error, constraints: loaded.constraints)
        }
    }

    static func wrap(_ error: any Error, constraints: [String: SchemaConstraint] = [:]) -> any Error {
        guard let error = error as? PostgresError else { return error }
        if error.kind == .commitOutcomeUnknown { return PostgresDataError.commitOutcomeUnknown(error) }
        if let name = error.constraintName, error.sqlState?.errorClass == "23" {
            return PostgresDataError.constraintViolation(constraint: constraints[name], name: name, underlying: error)
        }
        return PostgresDataError.database(error)
    }

    // MARK: Contexts that merge saves automatically

    /// History written by other coordinators, as the remote-change listener reads it (a
    /// store loaded with history tracking and remote-change notifications). The stream ends
    /// when the store closes.
    ///
    /// Core Data equivalent: observing `NSPersistentStoreRemoteChange`.
    public func remoteChanges() -> AsyncStream<PersistentStoreRemoteChange> {
        remoteChangeHub.subscribe()
    }

    /// The position after the last remote changes read; keep it to catch up after a
    /// restart. Nil without a remote-change listener.
    public var lastRemoteChangeToken: PersistentHistoryToken? {
        store.withLock { $0?.listener }?.token
    }

    /// Remote history: the row cache forgets what changed, the contexts that merge
    /// automatically merge it, subscribers get it.
    func mergeRemoteChanges(_ result: PersistentHistoryResult) {
        guard let token = result.token else { return }
        if let metrics = store.withLock({ $0?.metrics }) {
            let now = Date()
            for transaction in result.transactions {
                metrics.recordRemoteChangeLag(.seconds(max(0, now.timeIntervalSince(transaction.timestamp))))
            }
        }
        let change = PersistentStoreRemoteChange(transactions: result.transactions, token: token)
        var payload = change.objectIDNotification()
        payload.walPosition = result.walPosition
        rowCache.remove(payload.updatedObjectIDs.union(payload.deletedObjectIDs))
        let contexts = mergingContexts.withLock { $0.values.compactMap(\.context) }
        for context in contexts where context.automaticallyMergesChangesFromParent {
            context.enqueueMerge(payload)
        }
        remoteChangeHub.post(change)
    }

    /// Adds a root context to (or removes it from) the contexts told about saves and remote
    /// changes; a context leaves when it stops merging or goes away.
    func setMergesChanges(_ context: ManagedObjectContext, _ merges: Bool) {
        let box = merges ? ManagedObjectContextBox(context) : nil
        mergingContexts.withLock { $0[ObjectIdentifier(context)] = box }
    }

    /// Forgets a context that is going away.
    func forgetContext(_ identifier: ObjectIdentifier) {
        mergingContexts.withLock { _ = $0.removeValue(forKey: identifier) }
    }

    /// Tells the other root contexts of this coordinator about a save; those that merge
    /// automatically refresh from it.
    func didSave(_ payload: ContextDidSave, from source: ManagedObjectContext) {
        let contexts = mergingContexts.withLock { $0.values.compactMap(\.context) }
        for context in contexts where context !== source && context.automaticallyMergesChangesFromParent {
            context.enqueueMerge(payload)
        }
    }
}

/// The row cache: the coordinator owns it; contexts and the store's readers say what they
/// read, keep, give up or wrote, through these methods only.
extension PersistentStoreCoordinator {
    /// The cached row of `id`, if any (with `oldest`, given by the database at that stamp or later).
    func cachedRow(for id: ManagedObjectID, oldest: UInt32? = nil) -> RowSnapshot? { rowCache.snapshot(for: id, oldest: oldest) }

    /// The cached rows of `ids`, nil where none is cached (or none as fresh as `oldest`).
    func cachedRows(for ids: [ManagedObjectID], oldest: UInt32? = nil) -> [RowSnapshot?] { rowCache.snapshots(for: ids, oldest: oldest) }

    /// What fills a fault that kept its own row (`pending`): that row, a newer cached one, or
    /// neither (the row changed since, or is older than `oldest`: read it again).
    /// Whether a fault's own row is as new as any the coordinator knows of (see
    /// ``RowCache/isCurrent(generation:stamp:oldest:)``).
    @inline(__always)
    func keptRowIsCurrent(generation: UInt64, stamp: UInt32, oldest: UInt32?) -> Bool {
        rowCache.isCurrent(generation: generation, stamp: stamp, oldest: oldest)
    }

    func cachedRow(for id: ManagedObjectID, pending: RowSnapshot, oldest: UInt32? = nil) -> RowCache.FaultRow {
        rowCache.row(for: id, pending: pending, oldest: oldest)
    }

    /// ``cachedRow(for:pending:oldest:)`` for many faults, in one lock.
    func cachedRows(forFaults faults: some Collection<(ManagedObjectID, RowSnapshot)>, oldest: UInt32? = nil) -> [RowCache.FaultRow] {
        rowCache.rows(for: faults, oldest: oldest)
    }

    /// The stamp below which cached rows are older than `maximumAge` (nil: any age will do).
    func oldestCachedRowStamp(maximumAge: Duration?) -> UInt32? { rowCache.oldestStamp(for: maximumAge) }

    /// Takes a reference on each row for a context's object (adding the row when new).
    func retainCachedRows(_ rows: some Sequence<(ManagedObjectID, RowSnapshot)>) { rowCache.retain(rows) }

    /// Gives up a context's references; a row without references leaves.
    func releaseCachedRows(_ ids: some Sequence<ManagedObjectID>) { rowCache.release(ids) }

    /// Replaces cached rows with newer ones (references unchanged).
    func refreshCachedRows(_ rows: some Sequence<(ManagedObjectID, RowSnapshot)>) { rowCache.update(rows) }

    /// Drops rows that changed or went (the next reader reads them again).
    func removeCachedRows(_ ids: some Sequence<ManagedObjectID>) { rowCache.remove(ids) }

    /// Makes room for `count` more rows of `entity` before a large result arrives.
    func reserveCachedRows(_ count: Int, for entity: EntityDescription) { rowCache.reserve(count, for: entity) }

    /// Starts a reader whose faults keep their rows to themselves (see ``RowCache/beginReading()``).
    func beginReadingCachedRows() -> RowCache.Reader { rowCache.beginReading() }

    /// Where the row cache stands before a fetch's query (see ``RowCache/mark()``).
    func cachedRowsMark() -> RowCache.Mark { rowCache.mark() }

    /// A reader begun after the query, as if before it (see ``RowCache/beginReading(unchangedSince:)``).
    func beginReadingCachedRows(unchangedSince mark: RowCache.Mark) -> RowCache.Reader? {
        rowCache.beginReading(unchangedSince: mark)
    }

    /// Rows in the cache now (for tests and monitoring).
    var cachedRowCount: Int { rowCache.count }

    /// Rows the cache has room for without growing (for tests).
    var cachedRowCapacity: Int { rowCache.capacity }

    /// Whether a large fetch's faults still keep their rows under a reader of the cache (for
    /// tests): while one does, the cache keeps the rows that change.
    var keepsRowsForReaders: Bool { rowCache.isReading }

    /// Rows a save found changed underneath: the rows as they are now replace the cached ones
    /// (a nil row: deleted), so that the next reader starts from them.
    func noteCurrentRows(_ rows: [(ManagedObjectID, RowSnapshot?)]) {
        rowCache.update(rows.compactMap { id, row in row.map { (id, $0) } })
        rowCache.remove(rows.filter { $0.1 == nil }.map(\.0))
    }

    /// Rows a save committed: `retained` now referenced by the saving context, `refreshed`
    /// already referenced, `deleted` gone.
    func noteCommittedRows(retained: [(ManagedObjectID, RowSnapshot)], refreshed: [(ManagedObjectID, RowSnapshot)],
                           deleted: [ManagedObjectID]) {
        rowCache.retain(retained)
        rowCache.update(refreshed)
        rowCache.remove(deleted)
    }
}
