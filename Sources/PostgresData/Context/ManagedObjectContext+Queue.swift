import Dispatch
import Foundation
import Logging
import OrderedCollections
import PostgresClient
import Tracing

/// Running work on the context's queue: blocks, store work from them, replica routing.
extension ManagedObjectContext {
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
            self.endEvent()
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
                defer { self.endEvent() }
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
            endEvent()
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
    func blockingStore<T: Sendable>(_ operation: @escaping @Sendable (StoreAccess?) async throws -> T) throws -> T {
        let access = makeStoreAccess()
        return try BlockingBridge.run { try await operation(access) }
    }

    /// Runs store work from the context's queue, suspending the calling task.
    func store<T: Sendable>(_ operation: @Sendable (StoreAccess?) async throws -> T) async throws -> T {
        try await operation(makeStoreAccess())
    }

    /// True when this context's reads run on the read replica now: a read-only context, or
    /// a fetch that allows it.
    var readsFromReplica: Bool { isReadOnly || replicaReadScope }

    /// True when the rows this context reads now must not enter the row cache nor be filled
    /// from it: they come from the replica or from a pinned snapshot, either of which may be
    /// older than the cache's rows.
    var readsOutsideRowCache: Bool { readsFromReplica || queryGeneration != nil }

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
        // Work started off the queue (batch requests) writes, and sees the database as it is.
        let generation = isOnQueue ? queryGeneration : nil
        guard (try? persistentStoreCoordinator.loaded())?.replica != nil else {
            return generation.map { StoreAccess(readsFromReplica: false, requiredReplayPosition: nil, generation: $0) }
        }
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
        return StoreAccess(readsFromReplica: replica, requiredReplayPosition: required, generation: generation) { position in
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
}
