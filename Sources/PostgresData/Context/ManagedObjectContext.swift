import Dispatch
import Foundation
import Logging
import OrderedCollections
import PostgresClient
import Synchronization
import Tracing

/// A scratchpad of managed objects: fetches them, tracks their changes, and saves those
/// changes in one transaction.
///
/// Core Data equivalent: `NSManagedObjectContext`. Each context has its own queue: the main
/// queue (``ConcurrencyType-swift.enum/mainQueue``, for a view or a server's request loop) or
/// a private one (``ConcurrencyType-swift.enum/privateQueue``, for background work). Use its
/// objects only inside ``perform(_:)-(()->T)`` or ``performAndWait(_:)``:
///
/// ```swift
/// let background = container.newBackgroundContext()
/// try await background.perform {
///     let item = Item(context: background)
///     item.name = "Buy milk"
///     try background.save()          // INSERT … SELECT FROM unnest(…), one transaction
/// }
/// ```
///
/// The context itself is `Sendable` (its methods hop to its queue or must be called there);
/// its objects are not, and cross between contexts only as ``ManagedObjectID``s.
public final class ManagedObjectContext: @unchecked Sendable, CustomStringConvertible {
    /// Which queue a context runs its work on.
    public enum ConcurrencyType: Sendable, Hashable {
        /// The main queue (the main actor's thread).
        case mainQueue
        /// A serial queue of the context's own.
        case privateQueue
    }

    /// The queue kind of the context.
    public let concurrencyType: ConcurrencyType
    /// The coordinator the context reads from and saves to (through its parent, if any).
    public let persistentStoreCoordinator: PersistentStoreCoordinator
    /// The coordinator's model's number (``ManagedObjectModel/number``): whether an entity
    /// description is the model's own, told without a reference to the model per new object.
    let modelNumber: UInt64
    /// The parent context: a child's save goes into its parent, not the database.
    public let parent: ManagedObjectContext?
    /// True for a context that only reads: with a read replica
    /// (``PersistentStoreCoordinator/StoreOptions/readReplicaConfiguration``) its fetches and
    /// faults run there, and its ``save()-306u2`` and batch requests throw
    /// ``PostgresDataError/readOnlyContext(_:)``. A child of a read-only context is read-only.
    ///
    /// No Core Data equivalent (Core Data marks whole stores read-only, with
    /// `NSReadOnlyPersistentStoreOption`).
    public let isReadOnly: Bool

    let queue: ContextQueue
    let notificationHub = NotificationHub()

    struct Settings {
        var name: String?
        var mergePolicy: MergePolicy = .error
        var shouldDeleteInaccessibleFaults = true
        var propagatesDeletesAtEndOfEvent = true
        var retainsRegisteredObjects = false
        var automaticallyMergesChangesFromParent = false
        var transactionAuthor: String?
        var replicaConsistency = ReplicaConsistency.ownWrites
        /// Reads from the replica wait for it to replay this far (with a replica): the WAL
        /// position after this context's last save or batch request, or after the changes
        /// last merged into it.
        var replayFloor: WALPosition?
    }

    let settings = Locked(Settings())
    /// ``stalenessInterval``'s bits, read without a lock by every fault that fills.
    private let stalenessBits = Atomic<UInt64>((-1.0).bitPattern)

    // Confined to `queue`. The change sets and pending changes, which every change of an
    // object touches, skip Swift's dynamic exclusivity checks (a sixth to a fifth of noting a change):
    // only the queue's code reaches them, and it holds no overlapping accesses.
    let registered = IdentityMap()
    @exclusivity(unchecked) var insertedSet = ObjectSet()
    @exclusivity(unchecked) var updatedSet = ObjectSet()
    @exclusivity(unchecked) var deletedSet = ObjectSet()
    /// The keys reserved for inserted objects before a save (a root context that writes),
    /// and the inserted objects no reservation covers yet.
    @exclusivity(unchecked) var keyReservation: KeyReservation?
    @exclusivity(unchecked) var keyDemand = KeyReservation.Demand()
    /// False while no object of the context has loaded a relationship stored elsewhere (set
    /// by the object when one does, cleared by `reset()`): saves and merges then skip the
    /// walk over every registered object that looks for them.
    var mayHoldRelationshipSets = false
    var recordedErrors: [PostgresDataError] = []
    /// Faults whose filling failed with a store error (see ``fulfillFault(_:)``), and the
    /// errors, thrown by the end of the enclosing `perform` or the next save.
    var unfilledFaults: [ManagedObject] = []
    var faultErrors: [PostgresDataError] = []
    /// Objects whose row was found gone when they were filled (they read as deleted).
    var inaccessibleIDs: Set<ManagedObjectID> = []
    @exclusivity(unchecked) var pendingChanges = PendingChanges()
    /// The batches of batched fetches filled most recently, oldest first.
    var filledBatches: [FaultingBatch] = []
    /// True while a fetch request that allows the replica runs.
    var replicaReadScope = false
    /// The span of the fetch, count or save under way on the queue, which the statements it
    /// sends describe (`db.query.text`).
    var activeSpan: (any Span)?
    /// The loaded store's metrics for the operation under way (read once per operation).
    var activeMetrics: StoreMetrics?
    /// While `willSave()` hooks run: the objects they change, insert or delete.
    @exclusivity(unchecked) var hookChanges: [ManagedObject]?
    /// During a save: the positions it writes for ordered relationships, by owner and
    /// relationship, which the relationships keep once it commits.
    var plannedPositions: [ObjectIdentifier: [Int: [Double]]] = [:]
    /// Once an object's ``ManagedObject/changedValuesForCurrentEvent()`` was asked for: each
    /// object's values at the end of the last event that changed it (nil: not tracked, which
    /// costs nothing per change).
    var eventBaselines: [ManagedObjectID: PropertyValues]?
    /// Deleted objects whose delete rules wait for the save (``propagatesDeletesAtEndOfEvent`` false).
    var deletesToPropagate: [ManagedObject] = []
    /// Loaded fetched properties: owner → property name → the objects' IDs, in order.
    var fetchedPropertyValues: [ManagedObjectID: [String: [ManagedObjectID]]] = [:]
    /// The snapshot this context's reads see, when it is pinned (``setQueryGenerationFrom(_:)``).
    var queryGeneration: QueryGeneration?
    /// The identity map's count at the end of the previous block, and how many objects that
    /// block registered: the next sweep's share (see ``sweepRegisteredObjects()``).
    var registeredCountAtBlockEnd = 0
    var registeredInPreviousBlock = 0
    /// How many decoded batches of a large fetch must wait for this context before the task
    /// decoding them makes their objects too (``ObjectsMadeAhead``); tests set 0 to have it
    /// make them for every batch.
    var objectsMadeAheadLead = 2
    /// The undo manager changes are recorded with (``undoManager``), the state of each object
    /// before its first change of the current event, and whether an undo is being applied.
    /// (Read by every insert and every value set.)
    @exclusivity(unchecked) var undoManagerStorage: UndoManager?
    @exclusivity(unchecked) var undoBaselines: UndoBaselines = [:]
    @exclusivity(unchecked) var isApplyingUndo = false
    /// Asynchronous fetches under way: their objects are held until they finish, so the
    /// blocks registering their batches do not sweep.
    var asynchronousFetchesInFlight = 0

    /// A context on its own queue (or the main queue) over `coordinator`; with `readOnly`, one
    /// that reads from the store's read replica and cannot save (see ``isReadOnly``).
    public init(concurrencyType: ConcurrencyType, coordinator: PersistentStoreCoordinator, readOnly: Bool = false) {
        self.concurrencyType = concurrencyType
        self.persistentStoreCoordinator = coordinator
        self.modelNumber = coordinator.managedObjectModel.number
        self.parent = nil
        self.isReadOnly = readOnly
        self.queue = ContextQueue(isMain: concurrencyType == .mainQueue)
    }

    /// A child context of `parent`: it reads through the parent and saves into it.
    ///
    /// Core Data equivalent: setting `parent` on a new context.
    public init(concurrencyType: ConcurrencyType, parent: ManagedObjectContext) {
        self.concurrencyType = concurrencyType
        self.persistentStoreCoordinator = parent.persistentStoreCoordinator
        self.modelNumber = parent.modelNumber
        self.parent = parent
        self.isReadOnly = parent.isReadOnly
        self.queue = ContextQueue(isMain: concurrencyType == .mainQueue)
        parent.notificationHub.addChild(self)
    }

    /// A name for logs and error messages.
    public var name: String? {
        get { settings.withLock { $0.name } }
        set { settings.withLock { $0.name = newValue } }
    }

    /// How a save resolves rows that changed underneath (default ``MergePolicy/error``).
    public var mergePolicy: MergePolicy {
        get { settings.withLock { $0.mergePolicy } }
        set { settings.withLock { $0.mergePolicy = newValue } }
    }

    /// When true (the default), a fault whose row is gone — another process deleted it —
    /// reads as a deleted object with its default values instead of failing; when false, the
    /// access records ``PostgresDataError/objectNotFound(_:)``, thrown by the next ``save()-306u2``
    /// or by the enclosing async ``perform(_:)-(()->T)``. Either way the program goes on.
    ///
    /// Core Data equivalent: the property of the same name.
    public var shouldDeleteInaccessibleFaults: Bool {
        get { settings.withLock { $0.shouldDeleteInaccessibleFaults } }
        set { settings.withLock { $0.shouldDeleteInaccessibleFaults = newValue } }
    }

    /// When true (the default), a deletion's delete rules (cascade, nullify, deny) apply by
    /// the end of the event — here, as the object is deleted; when false, they apply when the
    /// context saves, so that objects can be deleted and re-related freely until then.
    ///
    /// Core Data equivalent: `propagatesDeletesAtEndOfEvent`.
    public var propagatesDeletesAtEndOfEvent: Bool {
        get { settings.withLock { $0.propagatesDeletesAtEndOfEvent } }
        set { settings.withLock { $0.propagatesDeletesAtEndOfEvent = newValue } }
    }

    /// How old, in seconds, a row the coordinator's row cache holds may be for a fault to fill
    /// from it instead of asking the database: negative (the default) for any age, 0 for
    /// never. Fetches always ask the database; rows a save wrote or a fetch read count as
    /// given then. Ages are measured in 1/64 s.
    ///
    /// Core Data equivalent: the property of the same name (in seconds, negative by default).
    public var stalenessInterval: Double {
        get { Double(bitPattern: stalenessBits.load(ordering: .relaxed)) }
        set { stalenessBits.store(newValue.bitPattern, ordering: .relaxed) }
    }

    /// When false (the default, as in Core Data), the context holds its unchanged objects only
    /// while something else does: at the end of each event (a `perform` block,
    /// ``processPendingChanges()``) it lets go of a share of those nothing references any more,
    /// at least as many as it registered since, so that a long-lived context does not keep
    /// every object it ever fetched. Inserted, changed and deleted objects are always held
    /// until they are saved or rolled back. When true, every registered object stays until
    /// ``reset()``.
    ///
    /// Core Data equivalent: the property of the same name.
    public var retainsRegisteredObjects: Bool {
        get { settings.withLock { $0.retainsRegisteredObjects } }
        set { settings.withLock { $0.retainsRegisteredObjects = newValue } }
    }

    /// The row-cache stamp below which rows are too old for this context's faults (nil: any).
    var oldestAcceptableRowStamp: UInt32? {
        let interval = stalenessInterval
        guard interval >= 0 else { return nil }
        return persistentStoreCoordinator.oldestCachedRowStamp(maximumAge: .milliseconds(Int64(min(interval, 1e12) * 1000)))
    }

    /// When true, saves of sibling contexts (or of the parent, for a child) are merged into
    /// this context as they happen, and so are other processes' saves when the store has
    /// history tracking and remote-change notifications.
    /// Core Data equivalent: the property of the same name.
    public var automaticallyMergesChangesFromParent: Bool {
        get { settings.withLock { $0.automaticallyMergesChangesFromParent } }
        set {
            // Under the settings lock, so that the coordinator's registry follows the last write.
            settings.withLock { settings in
                guard settings.automaticallyMergesChangesFromParent != newValue else { return }
                settings.automaticallyMergesChangesFromParent = newValue
                if parent == nil { persistentStoreCoordinator.setMergesChanges(self, newValue) }
            }
        }
    }

    /// The author recorded in persistent history with this context's saves and batch
    /// requests, so that readers can tell (or skip) whose changes they are.
    /// Core Data equivalent: the property of the same name.
    public var transactionAuthor: String? {
        get { settings.withLock { $0.transactionAuthor } }
        set { settings.withLock { $0.transactionAuthor = newValue } }
    }

    /// Which writes this context's reads from the read replica must see (default
    /// ``ReplicaConsistency/ownWrites``): until the replica has replayed them, its reads go
    /// to the primary. Without a replica, every read is from the primary and this changes
    /// nothing.
    ///
    /// No Core Data equivalent.
    public var replicaConsistency: ReplicaConsistency {
        get { settings.withLock { $0.replicaConsistency } }
        set { settings.withLock { $0.replicaConsistency = newValue } }
    }

    /// Who writes, for persistent history; nil when the store keeps none.
    var historyOrigin: HistoryRecord.Origin? {
        guard (try? persistentStoreCoordinator.loaded().tracksHistory) == true else { return nil }
        return HistoryRecord.Origin(author: transactionAuthor, contextName: name, instanceID: persistentStoreCoordinator.instanceID)
    }

    public var description: String {
        let kind = concurrencyType == .mainQueue ? "main queue" : "private queue"
        if let name { return "\"\(name)\" (\(kind))" }
        return "\(kind) context 0x\(String(UInt(bitPattern: ObjectIdentifier(self).hashValue), radix: 16))"
    }

    deinit {
        if parent == nil { persistentStoreCoordinator.forgetContext(ObjectIdentifier(self)) }
        unregisterAll()
        pendingChanges.removeAll()
    }

    /// Empties the identity map: every registered object leaves the context (objects hold
    /// their context unretained, so none may keep it once it is gone), and their row-cache
    /// references are given back in one lock.
    func unregisterAll() {
        var ids: [ManagedObjectID] = []
        registered.removeAll { object in
            object.contextStorage = nil
            if object.isFaultStorage { object.pendingRow = nil }
            if object.holdsCacheReference {
                ids.append(object.objectID)
                object.holdsCacheReference = false
            }
        }
        if !ids.isEmpty { persistentStoreCoordinator.releaseCachedRows(ids) }
    }
}
