import Foundation
import PostgresClient

/// The results of a fetch request, kept current as the context changes: its own edits,
/// saves merged from other contexts, batch requests merged into it, and other processes'
/// saves (with persistent history). Each change comes as a ``FetchedResultsDifference``:
/// inserted, deleted, moved and updated objects with their index paths, and sections.
///
/// Core Data equivalent: `NSFetchedResultsController`. As there, use it on its context's
/// queue; the differences it publishes are `Sendable`, for server code that pushes live
/// updates (over a WebSocket, server-sent events) from another task. It knows no UI type.
///
/// ```swift
/// let context = container.newBackgroundContext()
/// context.automaticallyMergesChangesFromParent = true
/// let differences = try await context.perform {
///     let controller = FetchedResultsController(
///         fetchRequest: FetchRequest<Item>(predicate: try FetchPredicate(format: "done == NO"),
///                                          sortDescriptors: [FetchSortDescriptor(key: "name")]),
///         managedObjectContext: context)
///     try controller.performFetch()
///     return controller.differences()      // keep the controller alive while you read them
/// }
/// for await difference in differences { try await socket.send(difference.objectChanges) }
/// ```
///
/// The request's predicate and sort descriptors are evaluated in memory on each change, as
/// Core Data does (agreeing with SQL, see ``FetchPredicate/evaluate(with:)``); objects that
/// other contexts inserted or changed are loaded in one query per change.
public final class FetchedResultsController<Result: ManagedObject> {
    /// The request whose results are kept.
    public let fetchRequest: FetchRequest<Result>
    /// The context observed.
    public let managedObjectContext: ManagedObjectContext
    /// The key path whose value groups results into sections (it must order them too: make
    /// it the first sort descriptor's key); nil for one section.
    public let sectionNameKeyPath: String?
    /// Called on the context's queue after each change of the results, before
    /// ``differences()`` yields it.
    ///
    /// Core Data equivalent: the delegate's `controllerDidChangeContent(_:)`.
    public var didChangeContent: ((FetchedResultsDifference) -> Void)?

    /// The objects fetched, in order, across sections; nil before ``performFetch()``.
    public private(set) var fetchedObjects: [Result]?
    /// The sections; nil before ``performFetch()``.
    public private(set) var sections: [FetchedResultsSection<Result>]?

    private let order: ObjectOrder
    private let entity: EntityDescription
    private var observation: UInt64?
    private let subscribers = Locked<[UInt64: AsyncStream<FetchedResultsDifference>.Continuation]>([:])
    private var nextSubscriber: UInt64 = 0

    /// A controller of `fetchRequest`'s results in `context`, grouped by `sectionNameKeyPath`.
    public init(fetchRequest: FetchRequest<Result>, managedObjectContext context: ManagedObjectContext,
                sectionNameKeyPath: String? = nil) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = context
        self.sectionNameKeyPath = sectionNameKeyPath
        self.order = ObjectOrder(descriptors: fetchRequest.sortDescriptors)
        self.entity = context.persistentStoreCoordinator.managedObjectModel.entity(for: Result.self) ?? Result.entity()
    }

    deinit {
        if let observation { managedObjectContext.notificationHub.removeObserver(observation) }
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.finish() }
    }

    /// Fetches the results and starts following the context's changes. Call it on the
    /// context's queue.
    ///
    /// Core Data equivalent: `performFetch()`.
    public func performFetch() throws {
        let context = managedObjectContext
        context.assertOnQueue()
        if let key = sectionNameKeyPath, fetchRequest.sortDescriptors.first?.key != key {
            throw PostgresDataError.invalidRequest("the section key path \(key) must be the key of the first sort descriptor, so that sections are contiguous")
        }
        var request = fetchRequest
        request.resultType = .managedObject
        request.returnsObjectsAsFaults = false
        request.fetchBatchSize = 0
        let objects = try context.fetch(request)
        apply(try sorted(objects))
        if observation == nil {
            observation = context.notificationHub.observe(ObjectsObserver { [weak self] change in self?.contextChanged(change) })
        }
    }

    /// The differences from now on, as an async sequence. The sequence keeps the controller
    /// alive until its reader stops (cancelled, or the iterator dropped), so it can leave the
    /// `perform` block that made the controller.
    public func differences() -> AsyncStream<FetchedResultsDifference> {
        let (stream, continuation) = AsyncStream<FetchedResultsDifference>.makeStream(bufferingPolicy: .unbounded)
        nextSubscriber += 1
        let id = nextSubscriber
        subscribers.withLock { $0[id] = continuation }
        let keeper = Keeper(self)
        continuation.onTermination = { [weak subscribers] _ in
            subscribers?.withLock { _ = $0.removeValue(forKey: id) }
            keeper.release()
        }
        return stream
    }

    /// Holds the controller for a reader of its differences; only released, never used.
    private final class Keeper: @unchecked Sendable {
        private var controller: FetchedResultsController?
        private let lock = NSLock()
        init(_ controller: FetchedResultsController) { self.controller = controller }
        func release() {
            lock.lock()
            let held = controller
            controller = nil
            lock.unlock()
            // The last reference may go here, on whatever thread ended the stream: the
            // controller's deinit only touches thread-safe state.
            _ = held
        }
    }

    /// The object at `indexPath` (`[section, item]`).
    ///
    /// Core Data equivalent: `object(at:)`.
    public func object(at indexPath: IndexPath) -> Result {
        guard let sections, indexPath.count == 2, sections.indices.contains(indexPath[0]),
              sections[indexPath[0]].objects.indices.contains(indexPath[1]) else {
            preconditionFailure("no object at \(indexPath) in \(sections?.map(\.numberOfObjects) ?? []) (did you call performFetch()?)")
        }
        return sections[indexPath[0]].objects[indexPath[1]]
    }

    /// Where `object` is in the results, or nil.
    ///
    /// Core Data equivalent: `indexPath(forObject:)`.
    public func indexPath(forObject object: Result) -> IndexPath? {
        positions[object.objectID]
    }

    // MARK: Following changes

    private var positions: [ManagedObjectID: IndexPath] = [:]

    private func sorted(_ objects: [Result]) throws -> [Result] {
        var failure: (any Error)?
        let result = objects.sorted { a, b in
            do { return try order.precedes(a, b) } catch {
                failure = failure ?? error
                return false
            }
        }
        if let failure { throw failure }
        return result
    }

    private func sectionName(of object: Result) -> String {
        guard let key = sectionNameKeyPath else { return "" }
        let value = (try? PredicateEvaluator().value(at: key, of: object)) ?? .null
        switch value {
        case .null: return ""
        case .string(let text): return text
        default: return value.anyValue.map { "\($0)" } ?? ""
        }
    }

    /// Groups ordered objects into sections and remembers where each is.
    private func apply(_ objects: [Result]) {
        var sections: [FetchedResultsSection<Result>] = []
        var positions: [ManagedObjectID: IndexPath] = [:]
        positions.reserveCapacity(objects.count)
        for object in objects {
            let name = sectionName(of: object)
            if sections.last?.name != name || sections.isEmpty {
                sections.append(FetchedResultsSection(name: name, objects: []))
            }
            positions[object.objectID] = IndexPath(indexes: [sections.count - 1, sections[sections.count - 1].objects.count])
            sections[sections.count - 1].objects.append(object)
        }
        self.fetchedObjects = objects
        self.sections = sections
        self.positions = positions
    }

    private func contextChanged(_ change: ContextObjectsDidChange) {
        guard let current = fetchedObjects else { return }
        let context = managedObjectContext
        func ours(_ id: ManagedObjectID) -> Bool { id.entity === entity }
        let changed = change.updatedObjectIDs.union(change.refreshedObjectIDs).filter(ours)
        let inserted = change.insertedObjectIDs.filter(ours)
        let deleted = change.deletedObjectIDs.filter(ours)
        guard !changed.isEmpty || !inserted.isEmpty || !deleted.isEmpty else { return }

        var candidates = current.filter { !deleted.contains($0.objectID) && context.registered[$0.objectID] === $0 }
        let present = Set(candidates.map(\.objectID))
        // Objects registered here only to be judged leave the context again if they do not match.
        var newcomers: [ManagedObject] = []
        for id in inserted.union(changed) where !present.contains(id) && !deleted.contains(id) {
            if let object = context.registered[id] as? Result {
                candidates.append(object)
            } else if let object = context.object(with: id) as? Result {
                candidates.append(object)
                newcomers.append(object)
            }
        }
        do {
            try context.fillFaults(candidates.filter(\.isFaultStorage))
            let predicate = fetchRequest.predicate
            let matching = try candidates.filter { object in
                guard !object.isFaultStorage, !object.isDeletedStorage else { return false }
                return try predicate?.evaluate(with: object) ?? true
            }
            let old = (sections ?? []).map(\.name)
            let oldPositions = positions
            let kept = Set(matching.map(\.objectID))
            context.unregister(newcomers.filter { !kept.contains($0.objectID) })
            apply(try sorted(matching))
            publish(difference(oldNames: old, oldPositions: oldPositions, oldOrder: current.map(\.objectID), changed: changed))
        } catch {
            context.persistentStoreCoordinator.logger.error("a fetched-results controller could not follow a change: \(error)")
        }
    }

    private func difference(oldNames: [String], oldPositions: [ManagedObjectID: IndexPath], oldOrder: [ManagedObjectID],
                            changed: Set<ManagedObjectID>) -> FetchedResultsDifference {
        let names = (sections ?? []).map(\.name)
        var sectionChanges: [FetchedResultsSectionChange] = []
        for (index, name) in oldNames.enumerated() where !names.contains(name) {
            sectionChanges.append(FetchedResultsSectionChange(type: .delete, sectionIndex: index, name: name))
        }
        for (index, name) in names.enumerated() where !oldNames.contains(name) {
            sectionChanges.append(FetchedResultsSectionChange(type: .insert, sectionIndex: index, name: name))
        }
        var objectChanges: [FetchedResultsChange] = []
        for id in oldOrder where positions[id] == nil {
            objectChanges.append(FetchedResultsChange(type: .delete, objectID: id, indexPath: oldPositions[id], newIndexPath: nil))
        }
        let newOrder = (fetchedObjects ?? []).map(\.objectID)
        var newRank: [ManagedObjectID: Int] = [:]
        for (rank, id) in newOrder.enumerated() { newRank[id] = rank }
        // Objects in both, in the old order; those off the longest run that kept its order moved.
        let kept = oldOrder.filter { newRank[$0] != nil }
        let stable = Self.longestIncreasingRun(kept.map { newRank[$0]! })
        for (position, id) in kept.enumerated() {
            let before = oldPositions[id]!, after = positions[id]!
            let sameSection = oldNames[before[0]] == names[after[0]]
            if !stable.contains(position) || !sameSection {
                objectChanges.append(FetchedResultsChange(type: .move, objectID: id, indexPath: before, newIndexPath: after))
            } else if changed.contains(id) {
                objectChanges.append(FetchedResultsChange(type: .update, objectID: id, indexPath: before, newIndexPath: after))
            }
        }
        for id in newOrder where oldPositions[id] == nil {
            objectChanges.append(FetchedResultsChange(type: .insert, objectID: id, indexPath: nil, newIndexPath: positions[id]))
        }
        return FetchedResultsDifference(sectionChanges: sectionChanges, objectChanges: objectChanges, sectionNames: names,
                                        objectIDs: (sections ?? []).map { $0.objects.map(\.objectID) })
    }

    private func publish(_ difference: FetchedResultsDifference) {
        guard !difference.objectChanges.isEmpty || !difference.sectionChanges.isEmpty else { return }
        didChangeContent?(difference)
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(difference) }
    }

    /// The positions in `values` of a longest strictly increasing subsequence.
    static func longestIncreasingRun(_ values: [Int]) -> Set<Int> {
        var tails: [Int] = []          // positions ending the best run of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (position, value) in values.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var run: Set<Int> = []
        var position = tails.last ?? -1
        while position >= 0 {
            run.insert(position)
            position = previous[position]
        }
        return run
    }
}

extension ManagedObjectContext {
    /// Loads the values of `objects` that are faults: from the row cache, then in one query
    /// per entity. Objects whose rows are gone stay faults.
    func fillFaults(_ objects: [ManagedObject]) throws {
        let faults = objects.filter(\.isFaultStorage)
        guard !faults.isEmpty else { return }
        let cached = rowsWithoutQuery(for: faults)
        var missing: [ManagedObject] = []
        for (object, snapshot) in zip(faults, cached) {
            if let snapshot { fill(object, snapshot: snapshot) } else { missing.append(object) }
        }
        let coordinator = persistentStoreCoordinator
        for (entity, group) in SavePlan.grouped(missing, by: \.entity) {
            let keys = group.compactMap(\.objectID.primaryKey)
            let rows = try blockingStore { access in try await coordinator.fetchSnapshots(entity, keys: keys, access: access) }
            _ = register(rows, entity: entity, asFaults: false)
        }
    }
}
