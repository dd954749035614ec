import Dispatch
import Foundation
import Logging
import OrderedCollections
import PostgresClient
import Tracing

/// Registered objects: the identity map seen from outside, and fetched rows entering it.
extension ManagedObjectContext {
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
        // An ID naming a parent entity: its row's own entity is read (the one query here).
        var objectID = objectID
        if !objectID.entity.subentities.isEmpty, let concrete = try? concreteIDs([objectID]).first { objectID = concrete }
        let object = ManagedObject.makeFault(objectID)
        object.join(self)
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

    /// Registers fetched rows: new objects for unknown IDs, fresh values for faults; objects
    /// already holding values keep them (and their unsaved changes).
    ///
    /// Faults (`asFaults`) find their rows in the row cache; with `sharesRows` false, objects
    /// filled here hold their rows themselves and the row cache is not touched.
    /// Rows `fromReplica` (or read by a pinned context) never enter the row cache (they may be
    /// older than its rows): their objects hold them.
    ///
    /// With `missing` (a fetch with ``FetchRequest/propertiesToFetch``), the rows hold NULL for
    /// those properties: the objects filled here keep them to themselves, marked partial, and
    /// load the whole row when one of them is read; objects already filled keep theirs.
    func register(_ rows: some FetchedRows, entity: EntityDescription, asFaults requestedFaults: Bool = false,
                  sharesRows: Bool = true, fromReplica: Bool? = nil, refreshingChanged: Bool = false,
                  missing: PropertySet? = nil) -> [ManagedObject] {
        var objects: [ManagedObject] = []
        register(rows, entity: entity, asFaults: requestedFaults, sharesRows: sharesRows, fromReplica: fromReplica,
                 refreshingChanged: refreshingChanged, missing: missing, appendingTo: &objects)
        return objects
    }

    /// ``register(_:entity:asFaults:sharesRows:fromReplica:refreshingChanged:missing:)``,
    /// appending the objects to `objects` (one reference each, not one more per batch).
    func register(_ rows: some FetchedRows, entity: EntityDescription, asFaults requestedFaults: Bool = false,
                  sharesRows: Bool = true, fromReplica: Bool? = nil, refreshingChanged: Bool = false,
                  missing: PropertySet? = nil, madeAhead: ObjectsMadeAhead? = nil, appendingTo objects: inout [ManagedObject]) {
        var claim: IdentityMap.Claim?
        register(rows, entity: entity, asFaults: requestedFaults, sharesRows: sharesRows, fromReplica: fromReplica,
                 refreshingChanged: refreshingChanged, missing: missing, madeAhead: madeAhead, claim: &claim, appendingTo: &objects)
    }

    /// ``register(_:entity:asFaults:sharesRows:fromReplica:refreshingChanged:missing:madeAhead:appendingTo:)``
    /// under `claim`, while it holds: the rows' objects are all new, and enter the identity
    /// map without a lookup each (``IdentityMap/Claim``); else `claim` is dropped.
    func register(_ rows: some FetchedRows, entity: EntityDescription, asFaults requestedFaults: Bool = false,
                  sharesRows: Bool = true, fromReplica: Bool? = nil, refreshingChanged: Bool = false,
                  missing: PropertySet? = nil, madeAhead: ObjectsMadeAhead? = nil, claim: inout IdentityMap.Claim?,
                  appendingTo objects: inout [ManagedObject]) {
        let fromReplica = (fromReplica ?? readsFromReplica) || queryGeneration != nil
        let asFaults = requestedFaults && !fromReplica
        let shares = (sharesRows || asFaults) && !fromReplica
        let start = objects.count
        if objects.capacity < start + rows.count { objects.reserveCapacity(max(start + rows.count, 2 * objects.capacity)) }
        var cached: [(ManagedObjectID, RowSnapshot)] = []
        if shares { cached.reserveCapacity(rows.count) }
        var held = claim.flatMap { registered.holds($0) ? $0 : nil }
        registered.reserve(rows.count, under: held)
        defer { claim = held }
        var refreshed: [(ManagedObjectID, RowSnapshot)] = []
        // Whether each object of `objects` was given values here: told so (awakeFromFetch)
        // once registration is done. (A flag per object, not a list of them: no reference
        // counting per row.)
        var awakened: [Bool] = []
        awakened.reserveCapacity(rows.count)
        // Objects are filled with decoded rows; faults leave theirs as they came.
        // (A row decoded already is taken as it is: `decoded()` would copy it.)
        @inline(__always) func snapshot(at index: Int) -> RowSnapshot {
            let snapshot = rows.snapshot(at: index)
            return !asFaults && snapshot.isEncoded ? snapshot.decoded() : snapshot
        }
        if var claimed = held {
            // Every row a new object (a fetch into an empty context): each row's snapshot goes
            // straight into its object, and the object into the list, with no copy of either
            // to release at the end of the row.
            for index in 0..<rows.count {
                let id = ManagedObjectID(entity: entity, primaryKey: rows.key(at: index))
                let object = newObject(for: id, row: index, madeAhead: madeAhead)
                // The row is read for each holder: one local kept for both cost a copy and
                // its release per row (registering W2's million rows 33 → 43 ms a run).
                if let missing {
                    object.fill(with: snapshot(at: index))
                    object.missingProperties = missing
                } else {
                    if shares {
                        object.holdsCacheReference = true
                        cached.append((id, snapshot(at: index)))
                    }
                    if !asFaults { object.fill(with: snapshot(at: index)) }
                }
                registered.insertClaimed(object, claim: &claimed)
                objects.append(consume object)
                awakened.append(missing != nil || !asFaults)
            }
            held = claimed
        } else {
            let salt = ManagedObjectID.permanentSalt(of: entity)
            for index in 0..<rows.count {
                if index + Self.prefetchDistance < rows.count {
                    registered.prefetchSlots(forKey: rows.key(at: index + Self.prefetchDistance), salt: salt)
                }
                let id = ManagedObjectID(entity: entity, primaryKey: rows.key(at: index))
                let snapshot = snapshot(at: index)
                let (object, isNew) = registered.object(for: id) {
                    let object = newObject(for: id, row: index, madeAhead: madeAhead)
                    if !asFaults { object.fill(with: snapshot) }
                    return object
                }
                objects.append(object)
                if let missing, isNew || object.isFaultStorage {
                    object.fill(with: snapshot)
                    object.missingProperties = missing
                    awakened.append(true)
                    continue
                }
                if isNew {
                    awakened.append(!asFaults)
                    if shares {
                        object.holdsCacheReference = true
                        cached.append((id, snapshot))
                    }
                } else if object.isFaultStorage && asFaults {
                    awakened.append(false)
                    object.pendingRow = nil
                    if object.holdsCacheReference {
                        refreshed.append((id, snapshot))
                    } else {
                        cached.append((id, snapshot))
                        object.holdsCacheReference = true
                    }
                } else if object.isFaultStorage {
                    object.fill(with: snapshot)
                    awakened.append(true)
                    if shares && !object.holdsCacheReference {
                        cached.append((id, snapshot))
                        object.holdsCacheReference = true
                    }
                } else if refreshingChanged && !object.hasChanges && object.snapshot?.version != snapshot.version {
                    // shouldRefreshRefetchedObjects: the row moved since the object read it.
                    awakened.append(false)
                    rebase(object, onto: snapshot, keepLocalChanges: false)
                    if object.holdsCacheReference { refreshed.append((id, snapshot)) }
                } else {
                    awakened.append(false)
                }
            }
        }
        let coordinator = persistentStoreCoordinator
        if !cached.isEmpty { coordinator.retainCachedRows(cached) }
        if !refreshed.isEmpty { coordinator.refreshCachedRows(refreshed) }
        // Each object borrowed from the array, which holds it throughout: taking it out would
        // retain and release each one around the call.
        objects.withUnsafeBufferPointer { objects in
            ManagedObject.forEachBorrowed(in: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: objects[start...]))) { offset, object in
                if awakened[offset] { object.awakeFromFetch() }
            }
        }
    }

    /// Registers a batch of a large fetch of faults (an asynchronous one, or an ordinary one
    /// of more than ``fetchStreamBatchSize`` rows): each new fault keeps its row to itself
    /// (``ManagedObject/pendingRow``), and the row cache is not touched — a million faults
    /// cost a million objects and identity-map entries, nothing more. A registered fault
    /// takes the newer row; objects holding values keep them (and their unsaved changes).
    func registerFaults(_ rows: EncodedBatch, entity: EntityDescription) -> [ManagedObject] {
        var objects: [ManagedObject] = []
        registerFaults(rows, entity: entity, appendingTo: &objects)
        return objects
    }

    /// ``registerFaults(_:entity:)``, appending the objects to `objects`.
    func registerFaults(_ rows: EncodedBatch, entity: EntityDescription, madeAhead: ObjectsMadeAhead? = nil,
                        appendingTo objects: inout [ManagedObject]) {
        var claim: IdentityMap.Claim?
        registerFaults(rows, entity: entity, madeAhead: madeAhead, claim: &claim, appendingTo: &objects)
    }

    /// ``registerFaults(_:entity:)``, appending the objects to `objects`: under `claim`, while
    /// it holds, as new objects not looked up (``IdentityMap/Claim``); else `claim` is dropped.
    func registerFaults(_ rows: EncodedBatch, entity: EntityDescription, madeAhead: ObjectsMadeAhead? = nil,
                        claim: inout IdentityMap.Claim?, appendingTo objects: inout [ManagedObject]) {
        if objects.capacity < objects.count + rows.count { objects.reserveCapacity(max(objects.count + rows.count, 2 * objects.capacity)) }
        // Row `index`'s new fault, in no map yet.
        @inline(__always) func makeFault(_ index: Int, _ id: ManagedObjectID) -> ManagedObject {
            let object = newObject(for: id, row: index, madeAhead: madeAhead)
            object.pendingRow = rows.snapshot(at: index)
            return object
        }
        if var held = claim, registered.holds(held) {
            registered.reserve(rows.count, under: held)
            for index in 0..<rows.count {
                let object = makeFault(index, ManagedObjectID(entity: entity, primaryKey: rows.key(at: index)))
                registered.insertClaimed(object, claim: &held)
                // Moved: a copy would be one more retain, and its release, per fault.
                objects.append(consume object)
            }
            claim = held
            return
        }
        claim = nil
        registered.reserve(rows.count)
        var released: [ManagedObjectID] = []
        let salt = ManagedObjectID.permanentSalt(of: entity)
        for index in 0..<rows.count {
            if index + Self.prefetchDistance < rows.count {
                registered.prefetchSlots(forKey: rows.key(at: index + Self.prefetchDistance), salt: salt)
            }
            let id = ManagedObjectID(entity: entity, primaryKey: rows.key(at: index))
            let (object, isNew) = registered.object(for: id) { makeFault(index, id) }
            objects.append(object)
            if !isNew && object.isFaultStorage {
                if object.holdsCacheReference {
                    object.holdsCacheReference = false
                    released.append(id)
                }
                object.pendingRow = rows.snapshot(at: index)
            }
        }
        if !released.isEmpty { persistentStoreCoordinator.releaseCachedRows(released) }
    }

    /// How many rows ahead registration loads the identity map's slots for a row's key.
    static let prefetchDistance = 16

    /// A new fault for row `row` of a fetched batch, joined to this context and in no map yet:
    /// the one the decoding task made ahead for it, if any.
    @inline(__always)
    private func newObject(for id: ManagedObjectID, row: Int, madeAhead: ObjectsMadeAhead?) -> ManagedObject {
        let object = madeAhead?.take(row) ?? ManagedObject.makeFault(id)
        object.join(self)
        return object
    }
}

extension ManagedObjectContext {
    /// The end of a block of the context's queue (Core Data's end of event): changes are
    /// announced, and unchanged objects nothing holds any more may leave.
    func endEvent() {
        processPendingChanges()
        sweepRegisteredObjects()
    }

    /// Lets go of unchanged objects nothing but the identity map holds (unless
    /// ``retainsRegisteredObjects``): a slice of the map per block, as many slots as the
    /// previous block registered objects plus 256. The work stays proportional to
    /// registrations, and a block that registers many objects (a large fetch, whose results
    /// the caller holds) is not charged for looking at them at its own end.
    func sweepRegisteredObjects() {
        let count = registered.count
        let share = 256 + registeredInPreviousBlock
        registeredInPreviousBlock = max(0, count - registeredCountAtBlockEnd)
        registeredCountAtBlockEnd = count
        guard count > 0, !retainsRegisteredObjects, asynchronousFetchesInFlight == 0 else { return }
        var released: [ManagedObjectID] = []
        let tracksEvents = eventBaselines != nil
        let removed = registered.sweep(limit: share) { object in
            // Inserted, changed and deleted objects are held by the context's sets, never unique.
            guard !object.isDeletedStorage else { return false }
            let id = object.objectID
            if object.holdsCacheReference {
                object.holdsCacheReference = false
                released.append(id)
            }
            if !fetchedPropertyValues.isEmpty { fetchedPropertyValues[id] = nil }
            if tracksEvents { eventBaselines?[id] = nil }
            object.contextStorage = nil
            return true
        }
        registeredCountAtBlockEnd -= removed
        if !released.isEmpty { persistentStoreCoordinator.releaseCachedRows(released) }
    }
}
