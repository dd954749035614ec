import Dispatch
import Foundation
import Logging
import OrderedCollections
import PostgresClient
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

    private struct Settings {
        var name: String?
        var mergePolicy: MergePolicy = .error
        var shouldDeleteInaccessibleFaults = true
        var automaticallyMergesChangesFromParent = false
        var transactionAuthor: String?
        var replicaConsistency = ReplicaConsistency.ownWrites
        /// Reads from the replica wait for it to replay this far (with a replica): the WAL
        /// position after this context's last save or batch request, or after the changes
        /// last merged into it.
        var replayFloor: WALPosition?
    }

    private let settings = Locked(Settings())

    // Confined to `queue`.
    let registered = IdentityMap()
    var insertedSet = OrderedDictionary<ObjectIdentifier, ManagedObject>()
    var updatedSet = OrderedDictionary<ObjectIdentifier, ManagedObject>()
    var deletedSet = OrderedDictionary<ObjectIdentifier, ManagedObject>()
    var recordedErrors: [PostgresDataError] = []
    /// Faults whose filling failed with a store error (see ``fulfillFault(_:)``), and the
    /// errors, thrown by the end of the enclosing `perform` or the next save.
    var unfilledFaults: [ManagedObject] = []
    var faultErrors: [PostgresDataError] = []
    /// Objects whose row was found gone when they were filled (they read as deleted).
    var inaccessibleIDs: Set<ManagedObjectID> = []
    var pendingChanges = PendingChanges()
    /// The batches of batched fetches filled most recently, oldest first.
    var filledBatches: [FaultingBatch] = []
    /// True while a fetch request that allows the replica runs.
    var replicaReadScope = false
    /// The span of the fetch, count or save under way on the queue, which the statements it
    /// sends describe (`db.query.text`).
    var activeSpan: (any Span)?

    /// A context on its own queue (or the main queue) over `coordinator`; with `readOnly`, one
    /// that reads from the store's read replica and cannot save (see ``isReadOnly``).
    public init(concurrencyType: ConcurrencyType, coordinator: PersistentStoreCoordinator, readOnly: Bool = false) {
        self.concurrencyType = concurrencyType
        self.persistentStoreCoordinator = coordinator
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
    }

    /// Empties the identity map: every registered object leaves the context (objects hold
    /// their context unretained, so none may keep it once it is gone), and their row-cache
    /// references are given back in one lock.
    private func unregisterAll() {
        var ids: [ManagedObjectID] = []
        registered.forEach { object in
            object.contextStorage = nil
            if object.isFaultStorage { object.pendingRow = nil }
            if object.holdsCacheReference {
                ids.append(object.objectID)
                object.holdsCacheReference = false
            }
        }
        registered.removeAll()
        if !ids.isEmpty { persistentStoreCoordinator.rowCache.release(ids) }
    }

    // MARK: Running work on the context's queue

    /// True when the caller runs on this context's queue: inside one of its blocks (for a
    /// main-queue context, also anywhere on the main thread).
    public var isOnQueue: Bool { queue.isCurrent }

    /// Runs `block` on the context's queue and returns its result.
    ///
    /// Core Data equivalent: `perform(_:)` (the async form). The block runs after the blocks
    /// already submitted, on one of the library's context threads; it may use the context's
    /// objects, and returns only `Sendable` values (object IDs, not objects). The calling
    /// task suspends meanwhile. Store work inside the block (``save()-306u2``, ``fetch(_:)-68p1z``, a
    /// fault) blocks that context thread, never a thread of Swift's cooperative pool; use the
    /// async block form, ``perform(_:)``, for I/O that suspends.
    public func perform<T: Sendable, E: Error>(_ block: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        // Counted, so that a graceful shutdown waits for it (it cannot throw a refusal).
        let coordinator = persistentStoreCoordinator
        try? coordinator.beginUnit(refusing: false)
        defer { coordinator.endUnit() }
        let result: Result<T, E> = await queue.run { () async -> Result<T, E> in
            var result = Result<T, E> { () throws(E) -> T in try block() }
            self.processPendingChanges()
            // A fault's error ends a block that can throw it; otherwise the next save throws it.
            if case .success = result, E.self == (any Error).self, let error = self.faultErrorToThrow() as? E {
                result = .failure(error)
            }
            return result
        }
        return try result.get()
    }

    /// Runs an async `block` as one block of the context's queue — the server form of a unit
    /// of work — and returns its result.
    ///
    /// ```swift
    /// let id = try await context.perform {
    ///     let request = FetchRequest<Account>(predicate: "code == %@", code)
    ///     guard let account = try await context.fetch(request).first else { throw NotFound() }
    ///     account.balance += amount
    ///     try await context.save()          // one round trip: BEGIN, UPDATE, COMMIT
    ///     return account.objectID
    /// }
    /// ```
    ///
    /// Blocks of one context still run one at a time, in order: no other block of the context
    /// starts until this one has returned, awaits included. Inside it, the `await` forms of
    /// ``fetch(_:)-68p1z``, ``count(for:)-2mbj1``,
    /// ``existingObject(with:)-5tqle``, ``save()-306u2`` and ``execute(_:)-18nbd``
    /// suspend the task while the database works, so a thread serves other units of work
    /// meanwhile. Objects stay in the block: return IDs or `Sendable` values.
    ///
    /// A fault touched inside the block fills synchronously, as in Core Data: it blocks the
    /// context's thread (a library thread, never a cooperative one) for one query. Fetch what
    /// you will read (``FetchRequest/returnsObjectsAsFaults``, prefetching) or call
    /// `try await object.load()` to suspend instead. A store error while filling a fault is
    /// thrown when the block ends.
    ///
    /// Core Data equivalent: `perform(_:)`, whose blocks are synchronous; an async block is
    /// PostgresData's addition for servers.
    ///
    /// Once the store drains for a graceful shutdown
    /// (``PersistentStoreCoordinator/drain(timeout:)``), a new block throws
    /// ``PostgresDataError/shuttingDown`` before it starts; blocks under way, and blocks they
    /// start, run to their end.
    public func perform<T: Sendable>(_ block: @Sendable () async throws -> T) async throws -> T {
        let coordinator = persistentStoreCoordinator
        try coordinator.beginUnit(refusing: true)
        defer { coordinator.endUnit() }
        return try await PersistentStoreCoordinator.$isInsideUnit.withValue(true) {
            try await queue.run {
                defer { self.processPendingChanges() }
                let result = try await block()
                try self.throwFaultErrors()
                return result
            }
        }
    }

    /// Runs `block` on the context's queue and blocks the caller until it ends; runs it at
    /// once when called on the queue already (nested calls are fine).
    ///
    /// Core Data equivalent: `performAndWait(_:)`. The block runs on the calling thread, once
    /// the blocks submitted before it have ended. Prefer ``perform(_:)-(()->T)`` in async code: this
    /// blocks the calling thread (a cooperative one, there) until the block's turn and end.
    public func performAndWait<T, E: Error>(_ block: () throws(E) -> T) throws(E) -> T {
        if isOnQueue { return try block() }
        let coordinator = persistentStoreCoordinator
        try? coordinator.beginUnit(refusing: false)
        defer { coordinator.endUnit() }
        queue.acquireTurnBlocking()
        defer { queue.releaseTurn() }
        return try queue.runMarked { () throws(E) -> T in
            var result = Result<T, E> { () throws(E) -> T in try block() }
            processPendingChanges()
            if case .success = result, E.self == (any Error).self, let error = faultErrorToThrow() as? E {
                result = .failure(error)
            }
            return try result.get()
        }
    }

    @inline(__always)
    func assertOnQueue() {
        assert(isOnQueue, "a context's objects and methods are used on its queue only: wrap the call in perform { } or performAndWait { }")
    }

    /// Runs store work from the context's queue, blocking its thread until the work ends (the
    /// synchronous API; ``store(_:)`` suspends instead).
    func blockingStore<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
        let access = makeStoreAccess()
        guard access != nil else { return try BlockingBridge.run(operation) }
        return try BlockingBridge.run { try await access.run(operation) }
    }

    /// Runs store work from the context's queue, suspending the calling task.
    func store<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        try await makeStoreAccess().run(operation)
    }

    /// True when this context's reads run on the read replica now: a read-only context, or
    /// a fetch that allows it.
    var readsFromReplica: Bool { isReadOnly || replicaReadScope }

    /// Runs `body` with the reads it starts allowed on the replica when `allowed`.
    func readingFromReplica<T>(_ allowed: Bool, _ body: () throws -> T) rethrows -> T {
        guard allowed, !replicaReadScope else { return try body() }
        replicaReadScope = true
        defer { replicaReadScope = false }
        return try body()
    }

    func readingFromReplica<T>(_ allowed: Bool, _ body: () async throws -> T) async rethrows -> T {
        guard allowed, !replicaReadScope else { return try await body() }
        replicaReadScope = true
        defer { replicaReadScope = false }
        return try await body()
    }

    /// How store work of this context reaches the database: reading from the replica when
    /// the context does now (nil: as it does, asked on its queue), with the replay position
    /// its ``replicaConsistency`` requires, and noting the commit position of its writes.
    /// Nil when the store has no replica: then every read and write goes to the primary and
    /// nothing is noted.
    func makeStoreAccess(readsFromReplica replica: Bool? = nil) -> StoreAccess? {
        guard (try? persistentStoreCoordinator.loaded())?.replica != nil else { return nil }
        let replica = replica ?? (isOnQueue && readsFromReplica)
        let root = self.root
        var required: WALPosition?
        if replica {
            switch replicaConsistency {
            case .eventual: required = nil
            case .ownWrites: required = root.replayFloor
            case .coordinatorWrites: required = persistentStoreCoordinator.lastCommitPosition.withLock { $0 }
            }
        }
        return StoreAccess(readsFromReplica: replica, requiredReplayPosition: required) { position in
            root.raiseReplayFloor(to: position)
        }
    }

    /// The WAL position reads from the replica must wait for (see ``replicaConsistency``).
    var replayFloor: WALPosition? { root.settings.withLock { $0.replayFloor } }

    func raiseReplayFloor(to position: WALPosition) {
        settings.withLock { $0.replayFloor = max($0.replayFloor ?? position, position) }
    }

    /// The context that saves to the store: this one, or its parents' root.
    private var root: ManagedObjectContext {
        var context = self
        while let parent = context.parent { context = parent }
        return context
    }

    /// Throws when this context may not write.
    func checkWritable(_ what: String) throws {
        guard isReadOnly else { return }
        throw PostgresDataError.readOnlyContext("\(self) cannot \(what): it is read-only; make the change in a context created without readOnly")
    }

    // MARK: Registered objects

    /// Every object registered in the context.
    public var registeredObjects: Set<ManagedObject> { Set(registered.objects) }

    /// The object with `objectID` if it is registered in this context, else nil (no query).
    ///
    /// Core Data equivalent: `registeredObject(for:)`.
    public func registeredObject(for objectID: ManagedObjectID) -> ManagedObject? {
        assertOnQueue()
        return registered[objectID]
    }

    /// The object with `objectID`: the registered one, or a new fault; never a query.
    ///
    /// Core Data equivalent: `object(with:)`. Touching a property of a fault whose row is
    /// gone fails; use ``existingObject(with:)-5tqle`` when the row may be missing.
    public func object(with objectID: ManagedObjectID) -> ManagedObject {
        assertOnQueue()
        if let object = registered[objectID] { return object }
        let object = ManagedObject.makeFault(of: objectID.entity)
        object.objectID = objectID
        object.managedObjectContext = self
        registered.insert(object)
        return object
    }

    /// The object with `objectID`, its values loaded; throws
    /// ``PostgresDataError/objectNotFound(_:)`` when its row does not exist.
    ///
    /// Core Data equivalent: `existingObject(with:)`.
    public func existingObject(with objectID: ManagedObjectID) throws -> ManagedObject {
        assertOnQueue()
        return try BlockingBridge.run { try await self.existingObject(with: objectID) }
    }

    /// The object with `objectID`, its values loaded, as ``existingObject(with:)`` returns it,
    /// suspending the calling task while the database is asked.
    ///
    /// Core Data equivalent: `existingObject(with:)`.
    public func existingObject(with objectID: ManagedObjectID) async throws -> ManagedObject {
        assertOnQueue()
        if inaccessibleIDs.contains(objectID) { throw PostgresDataError.objectNotFound(objectID) }
        if let object = registered[objectID], !object.isFault { return object }
        if objectID.isTemporaryID && parent == nil { throw PostgresDataError.objectNotFound(objectID) }
        let object = self.object(with: objectID)
        if let row = rowWithoutQuery(for: object) {
            fill(object, snapshot: row)
            return object
        }
        guard let snapshot = try await loadValues(for: objectID) else {
            if object.isFault { unregister([object]) }
            throw PostgresDataError.objectNotFound(objectID)
        }
        fill(object, snapshot: snapshot)
        return object
    }

    // MARK: Inserting and deleting

    /// Registers a new object as inserted; its row is written by the next save.
    ///
    /// Core Data equivalent: `insert(_:)`. ``ManagedObject/init(context:)`` calls it.
    public func insert(_ object: ManagedObject) {
        assertOnQueue()
        let key = ObjectIdentifier(object)
        if object.isDeletedStorage, deletedSet[key] != nil {
            deletedSet[key] = nil
            object.isDeletedStorage = false
            return
        }
        let model = persistentStoreCoordinator.managedObjectModel
        if !model.owns(object.entity), object.objectID.primaryKey == nil,
           let own = model.entitiesByName[object.entity.name], own.managedObjectClass == object.entity.managedObjectClass {
            // Made with the description of another model (`Item.entity()` when the class is in
            // two models): it becomes an object of this context's model.
            object.objectID = .temporary(for: own)
        }
        if object.objectID.isUnassigned { object.objectID = .temporary(for: object.entity) }
        guard registered[object.objectID] == nil else { return }
        if object.values.isEmpty { object.values = PropertyValues(object.entity.placeholderValues) }
        object.isFaultStorage = false
        object.managedObjectContext = self
        object.isInsertedStorage = true
        registered.insert(object)
        insertedSet[key] = object
        pendingChanges.inserted.append(object.objectID)
    }

    /// Marks an object deleted and applies the delete rules of its relationships (nullify
    /// inverses, cascade); `deny` is checked when saving. The row goes at the next save.
    ///
    /// Core Data equivalent: `delete(_:)`.
    public func delete(_ object: ManagedObject) {
        assertOnQueue()
        guard object.managedObjectContext === self, !object.isDeletedStorage else { return }
        let key = ObjectIdentifier(object)
        object.willAccessValues()
        object.isDeletedStorage = true
        updatedSet[key] = nil
        if insertedSet.removeValue(forKey: key) != nil {
            applyDeleteRules(of: object)
            registered.remove(object.objectID)
            object.managedObjectContext = nil
            return
        }
        deletedSet[key] = object
        pendingChanges.deleted.insert(object.objectID)
        applyDeleteRules(of: object)
    }

    /// Called by objects whose values changed.
    func didChange(_ object: ManagedObject) {
        let key = ObjectIdentifier(object)
        guard !object.isInsertedStorage, !object.isDeletedStorage else { return }
        if object.isUpdated {
            updatedSet[key] = object
            pendingChanges.updated.insert(object.objectID)
        } else {
            updatedSet[key] = nil
        }
    }

    /// True when the context has unsaved inserts, updates or deletes.
    public var hasChanges: Bool {
        assertOnQueue()
        return !insertedSet.isEmpty || !updatedSet.isEmpty || !deletedSet.isEmpty
    }

    /// Objects inserted and not yet saved.
    public var insertedObjects: Set<ManagedObject> { Set(insertedSet.values) }
    /// Objects with unsaved changes.
    public var updatedObjects: Set<ManagedObject> { Set(updatedSet.values) }
    /// Objects deleted and not yet saved.
    public var deletedObjects: Set<ManagedObject> { Set(deletedSet.values) }

    /// Runs an object setter that cannot throw; an error is kept and thrown by the next save.
    func recordingErrors(_ body: () throws -> Void) {
        do {
            try body()
        } catch let error as PostgresDataError {
            persistentStoreCoordinator.logger.error("\(error)")
            recordedErrors.append(error)
        } catch {
            recordedErrors.append(.invalidRequest("\(error)"))
        }
    }

    // MARK: Discarding changes

    /// Discards every unsaved change: inserted objects leave, deleted ones come back, updated
    /// ones return to their committed values.
    ///
    /// Core Data equivalent: `rollback()`.
    public func rollback() {
        assertOnQueue()
        for object in insertedSet.values {
            registered.remove(object.objectID)
            object.managedObjectContext = nil
            object.isInsertedStorage = false
            object.isDeletedStorage = true
        }
        for object in Array(updatedSet.values) + Array(deletedSet.values) {
            object.isDeletedStorage = false
            revertToSnapshot(object)
        }
        registered.forEach { object in
            if !object.relationshipSets.isEmpty { object.relationshipSets = [:] }
        }
        insertedSet = [:]
        updatedSet = [:]
        deletedSet = [:]
        recordedErrors = []
        unfilledFaults = []
        faultErrors = []
        inaccessibleIDs = []
        pendingChanges = PendingChanges()
    }

    /// Forgets every registered object and unsaved change; objects held elsewhere become
    /// unusable. Core Data equivalent: `reset()`.
    public func reset() {
        assertOnQueue()
        unregisterAll()
        insertedSet = [:]
        updatedSet = [:]
        deletedSet = [:]
        recordedErrors = []
        unfilledFaults = []
        faultErrors = []
        inaccessibleIDs = []
        pendingChanges = PendingChanges()
        filledBatches = []
    }

    /// Updates an object from the store: without `mergeChanges` its unsaved changes are
    /// discarded and it becomes a fault; with it, the newest committed values are loaded and
    /// the unsaved changes applied on top.
    ///
    /// Core Data equivalent: `refresh(_:mergeChanges:)`.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        assertOnQueue()
        guard object.managedObjectContext === self, !object.isInsertedStorage else { return }
        if !mergeChanges || !object.hasChanges {
            updatedSet[ObjectIdentifier(object)] = nil
            turnIntoFault(object)
            return
        }
        let id = object.objectID
        if let snapshot = try? BlockingBridge.run({ try await self.loadValues(for: id, preferCache: false) }) {
            rebase(object, onto: snapshot, keepLocalChanges: true)
        }
    }

    func turnIntoFault(_ object: ManagedObject) {
        object.values = []
        object.snapshot = nil
        object.changedProperties.removeAll()
        object.relationshipSets = [:]
        object.isFaultStorage = true
        if object.holdsCacheReference {
            persistentStoreCoordinator.rowCache.release(CollectionOfOne(object.objectID))
            object.holdsCacheReference = false
        }
    }

    func revertToSnapshot(_ object: ManagedObject) {
        if let snapshot = object.snapshot {
            object.fill(with: snapshot)
        }
        object.changedProperties.removeAll()
        object.relationshipSets = [:]
    }

    /// Puts an object on a newer committed state, keeping its local changes when asked.
    func rebase(_ object: ManagedObject, onto newer: RowSnapshot, keepLocalChanges: Bool) {
        let snapshot = newer.decoded()
        let local = keepLocalChanges ? object.changedProperties : PropertySet()
        var merged = snapshot.values
        for index in local where index < object.values.count { merged[index] = object.values[index] }
        object.values = merged
        object.snapshot = snapshot
        object.changedProperties.removeAll()
        for index in local where merged[index] != snapshot.values[index] { object.changedProperties.insert(index) }
        object.isFaultStorage = false
        didChange(object)
    }

    // MARK: Faults

    /// Loads the values of a fault: from the parent context, the row cache, or the database.
    ///
    /// A property getter cannot throw, and nothing a store or another process does may stop
    /// the program: a fault whose row is gone reads as deleted, with its default values
    /// (Core Data's ``shouldDeleteInaccessibleFaults``); a store error (a lost connection is
    /// retried once on a fresh one) is recorded and thrown by the next ``save()`` or by the
    /// enclosing async ``perform(_:)``, and the object reads its default values
    /// until then. ``ManagedObject/load()`` throws both at the access instead.
    func fulfillFault(_ object: ManagedObject) {
        assertOnQueue()
        do {
            try BlockingBridge.run { try await self.load(object) }
        } catch PostgresDataError.objectNotFound(let id) where shouldDeleteInaccessibleFaults {
            persistentStoreCoordinator.logger.notice("the fault \(id) has no row (deleted elsewhere): it reads as deleted")
            markInaccessible(object)
        } catch PostgresDataError.objectNotFound(let id) {
            markInaccessible(object)
            faultErrors.append(.objectNotFound(id))
        } catch let error as PostgresDataError {
            recordFaultError(error, for: object)
        } catch {
            recordFaultError(.invalidRequest("filling the fault \(object.objectID) failed: \(error)"), for: object)
        }
    }

    /// Fills a fault, throwing ``PostgresDataError/objectNotFound(_:)`` when its row is gone
    /// and the store's error when it fails twice.
    func load(_ object: ManagedObject) async throws {
        guard object.isFaultStorage else { return }
        if let batch = object.faultingBatch, parent == nil {
            do {
                try fill(batch)
            } catch let error as PostgresDataError where error.isRetryable {
                persistentStoreCoordinator.logger.warning("filling a batch of faults failed, retrying once: \(error)")
                try fill(batch)
            }
            if !object.isFaultStorage { return }
        }
        if let row = rowWithoutQuery(for: object) {
            fill(object, snapshot: row)
            return
        }
        let id = object.objectID
        let loaded: RowSnapshot?
        do {
            loaded = try await loadValues(for: id)
        } catch let error as PostgresDataError where error.isRetryable {
            persistentStoreCoordinator.logger.warning("filling the fault \(id) failed, retrying once: \(error)")
            loaded = try await loadValues(for: id)
        }
        guard let snapshot = loaded else { throw PostgresDataError.objectNotFound(id) }
        fill(object, snapshot: snapshot)
    }

    /// A fault whose row is gone: it reads as deleted, with its entity's default values.
    func markInaccessible(_ object: ManagedObject) {
        object.values = PropertyValues(object.entity.placeholderValues)
        object.snapshot = nil
        object.isFaultStorage = false
        object.isDeletedStorage = true
        object.pendingRow = nil
        if object.holdsCacheReference {
            persistentStoreCoordinator.rowCache.release(CollectionOfOne(object.objectID))
            object.holdsCacheReference = false
        }
        pendingChanges.deleted.insert(object.objectID)
        inaccessibleIDs.insert(object.objectID)
    }

    /// An error met while reading a value, which cannot throw: it waits for the next save or
    /// the end of the async block, as a fault's error does.
    func recordFaultError(_ error: PostgresDataError) {
        persistentStoreCoordinator.logger.error("\(error)")
        faultErrors.append(error)
    }

    /// A fault the store failed to fill: the error waits for the next save or the end of the
    /// async block; the object reads its default values and becomes a fault again then.
    private func recordFaultError(_ error: PostgresDataError, for object: ManagedObject) {
        persistentStoreCoordinator.logger.error("filling the fault \(object.objectID) failed: \(error)")
        faultErrors.append(error)
        object.values = PropertyValues(object.entity.placeholderValues)
        object.isFaultStorage = false
        unfilledFaults.append(object)
    }

    /// Throws the first error of a fault filled since the last call, turning the faults that
    /// failed back into faults (the next access tries again).
    func throwFaultErrors() throws {
        guard let error = faultErrors.first else { return }
        faultErrors = []
        for object in unfilledFaults where object.snapshot == nil && !object.hasChanges {
            object.isFaultStorage = true
            object.values = []
        }
        unfilledFaults = []
        throw error
    }

    /// The first fault error, taken as ``throwFaultErrors()`` takes it; nil when none.
    func faultErrorToThrow() -> (any Error)? {
        do { try throwFaultErrors() } catch { return error }
        return nil
    }

    /// Throws the first error recorded since the last call: a fault's, else a setter's.
    func throwRecordedErrors() throws {
        try throwFaultErrors()
        guard let error = recordedErrors.first else { return }
        recordedErrors = []
        throw error
    }

    /// The row a fault a fetch returned fills with, without a query: the one it kept (a fault
    /// of an asynchronous fetch) unless the coordinator saw a newer one, or the row cache's;
    /// nil when the row changed without its values being known, or was never fetched.
    func rowWithoutQuery(for fault: ManagedObject) -> RowSnapshot? {
        let cache = persistentStoreCoordinator.rowCache
        if !fault.holdsCacheReference, let pending = fault.pendingRow {
            switch cache.row(for: fault.objectID, pending: pending) {
            case .own: return pending
            case .newer(let snapshot): return snapshot
            case .changed: return nil
            }
        }
        return fault.holdsCacheReference ? cache.snapshot(for: fault.objectID) : nil
    }

    /// The rows that fill `faults` without a query, in one lock per kind: as
    /// ``rowWithoutQuery(for:)``, except that any context's cached row serves a fault that
    /// kept none; nil where the database must be asked.
    func rowsWithoutQuery(for faults: [ManagedObject]) -> [RowSnapshot?] {
        let cache = persistentStoreCoordinator.rowCache
        var rows = cache.snapshots(for: faults.map(\.objectID))
        let pending = faults.indices.compactMap { index -> (Int, ManagedObjectID, RowSnapshot)? in
            guard !faults[index].holdsCacheReference, let row = faults[index].pendingRow else { return nil }
            return (index, faults[index].objectID, row)
        }
        guard !pending.isEmpty else { return rows }
        for ((index, _, own), found) in zip(pending, cache.rows(for: pending.map { ($0.1, $0.2) })) {
            switch found {
            case .own: rows[index] = own
            case .newer(let snapshot): rows[index] = snapshot
            case .changed: rows[index] = nil
            }
        }
        return rows
    }

    /// Gives a fault the values of `row` (decoded, if it was kept encoded); the decoded row
    /// enters the row cache.
    func fill(_ object: ManagedObject, snapshot row: RowSnapshot) {
        let snapshot = row.decoded()
        object.fill(with: snapshot)
        if parent == nil && !object.holdsCacheReference && !readsFromReplica {
            persistentStoreCoordinator.rowCache.retain(CollectionOfOne((object.objectID, snapshot)))
            object.holdsCacheReference = true
        }
    }

    /// The committed state of an object, decoded: the parent's view for a child context,
    /// else the row cache's, else the database's (nil when there is no row).
    func loadValues(for id: ManagedObjectID, preferCache: Bool = true) async throws -> RowSnapshot? {
        if let parent {
            return try parent.performAndWait { () throws -> RowSnapshot? in
                guard let object = try? parent.existingObject(with: id) else { return nil }
                return RowSnapshot(values: object.values, version: object.snapshot?.version ?? 0)
            }
        }
        guard let key = id.primaryKey else { return nil }
        let coordinator = persistentStoreCoordinator
        if preferCache, let snapshot = coordinator.rowCache.snapshot(for: id) { return snapshot.decoded() }
        let entity = id.entity
        let rows = try await store { try await coordinator.fetchSnapshots(entity, keys: [key]) }
        return rows.first?.1
    }

    /// Registers fetched rows: new objects for unknown IDs, fresh values for faults; objects
    /// already holding values keep them (and their unsaved changes).
    ///
    /// Faults (`asFaults`) find their rows in the row cache; with `sharesRows` false, objects
    /// filled here hold their rows themselves and the row cache is not touched.
    /// Rows `fromReplica` never enter the row cache (they may be older than its rows): their
    /// objects hold them.
    func register(_ rows: [(Int64, RowSnapshot)], entity: EntityDescription, asFaults requestedFaults: Bool = false,
                  sharesRows: Bool = true, fromReplica: Bool? = nil) -> [ManagedObject] {
        let fromReplica = fromReplica ?? readsFromReplica
        let asFaults = requestedFaults && !fromReplica
        let shares = (sharesRows || asFaults) && !fromReplica
        var objects: [ManagedObject] = []
        objects.reserveCapacity(rows.count)
        var cached: [(ManagedObjectID, RowSnapshot)] = []
        if shares { cached.reserveCapacity(rows.count) }
        registered.reserve(rows.count)
        var refreshed: [(ManagedObjectID, RowSnapshot)] = []
        for (key, row) in rows {
            let id = ManagedObjectID(entity: entity, primaryKey: key)
            // Objects are filled with decoded rows; faults leave theirs as they came.
            let snapshot = asFaults ? row : row.decoded()
            let (object, isNew) = registered.object(for: id) {
                makeRegisteredObject(id, entity: entity, snapshot: snapshot, asFaults: asFaults)
            }
            objects.append(object)
            if isNew {
                if shares {
                    object.holdsCacheReference = true
                    cached.append((id, snapshot))
                }
            } else if object.isFaultStorage && asFaults {
                object.pendingRow = nil
                if object.holdsCacheReference {
                    refreshed.append((id, snapshot))
                } else {
                    cached.append((id, snapshot))
                    object.holdsCacheReference = true
                }
            } else if object.isFaultStorage {
                object.fill(with: snapshot)
                if shares && !object.holdsCacheReference {
                    cached.append((id, snapshot))
                    object.holdsCacheReference = true
                }
            }
        }
        let cache = persistentStoreCoordinator.rowCache
        if !cached.isEmpty { cache.retain(cached) }
        if !refreshed.isEmpty { cache.update(refreshed) }
        return objects
    }

    /// Registers a batch of an asynchronous fetch of faults: each new fault keeps its row,
    /// still encoded, to itself (``ManagedObject/pendingRow``), and the row cache is not
    /// touched — a million faults cost a million objects and identity-map entries, nothing
    /// more. A registered fault takes the newer row; objects holding values keep them (and
    /// their unsaved changes).
    func registerFaults(_ rows: EncodedRows, entity: EntityDescription) -> [ManagedObject] {
        var objects: [ManagedObject] = []
        objects.reserveCapacity(rows.count)
        registered.reserve(rows.count)
        var released: [ManagedObjectID] = []
        for (index, key) in rows.keys.enumerated() {
            let id = ManagedObjectID(entity: entity, primaryKey: key)
            let (object, isNew) = registered.object(for: id) {
                let object = ManagedObject.makeFault(of: entity)
                object.objectID = id
                object.contextStorage = self
                object.pendingRow = rows.snapshot(at: index)
                return object
            }
            objects.append(object)
            if !isNew && object.isFaultStorage {
                if object.holdsCacheReference {
                    object.holdsCacheReference = false
                    released.append(id)
                }
                object.pendingRow = rows.snapshot(at: index)
            }
        }
        if !released.isEmpty { persistentStoreCoordinator.rowCache.release(released) }
        return objects
    }

    /// A new object of this context for a fetched row: a fault, or holding the row's values.
    @inline(__always)
    private func makeRegisteredObject(_ id: ManagedObjectID, entity: EntityDescription, snapshot: RowSnapshot,
                                      asFaults: Bool) -> ManagedObject {
        let object = ManagedObject.makeFault(of: entity)
        object.objectID = id
        object.managedObjectContext = self
        if !asFaults { object.fill(with: snapshot) }
        return object
    }
}

/// Changes since the last objects-did-change notification.
struct PendingChanges {
    var inserted: [ManagedObjectID] = []
    var updated: Set<ManagedObjectID> = []
    var deleted: Set<ManagedObjectID> = []
    var refreshed: Set<ManagedObjectID> = []

    var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty }
}
