import Foundation

/// An object of an entity, living in one ``ManagedObjectContext`` that tracks its changes.
///
/// Core Data equivalent: `NSManagedObject`. Declare subclasses with `@Entity`:
///
/// ```swift
/// @Entity final class Item: ManagedObject {
///     var name: String
///     var done = false
/// }
/// let item = Item(context: context)   // inserted; saved by context.save()
/// ```
///
/// Objects are confined to their context: use them only inside the context's `perform`
/// blocks (or on the main actor for a main-queue context), and pass ``objectID`` elsewhere.
/// They are deliberately not `Sendable`.
open class ManagedObject: Hashable, CustomStringConvertible {
    // The stored properties a fetch, an insert or a save sets on every object skip Swift's
    // dynamic exclusivity checks (they cost a sixth of registering a fetched object): objects
    // are confined to their context's queue, and PostgresData never holds overlapping
    // accesses to them.

    /// The object's ID: temporary until saved, then the row's primary key.
    @exclusivity(unchecked) public internal(set) var objectID: ManagedObjectID
    // The flags sit after the ID, in the bytes its alignment leaves free: a fetch of a million
    // objects allocates a million of these, and every 16 bytes is 16 MB of fresh pages.
    @exclusivity(unchecked) var isFaultStorage = true
    @exclusivity(unchecked) var isInsertedStorage = false
    @exclusivity(unchecked) var isDeletedStorage = false
    /// True while the object's context holds a reference in the coordinator's row cache for it.
    @exclusivity(unchecked) var holdsCacheReference = false
    /// True while the context's pending changes list the object as updated.
    @exclusivity(unchecked) var isPendingUpdate = false
    /// True while ``values`` are those of the snapshot, a row of ``DecodedRows``.
    @exclusivity(unchecked) private var valuesInSnapshot = false
    /// True while the object is a fault counted by the reading its kept row waits under
    /// (``KeptReading``): it counts off once, when it fires or lets go of the row.
    @exclusivity(unchecked) private var waitsInKeptReading = false
    /// The context, while the object is registered in it. Not a weak reference (forming one
    /// per fetched object cost a quarter of registering it): every path that takes an object
    /// out of a context's identity map clears it, and so does the context's `deinit` for the
    /// objects still registered.
    var contextStorage: ManagedObjectContext? {
        @inline(__always) get { contextReference?.takeUnretainedValue() }
        @inline(__always) set { contextReference = newValue.map { Unmanaged.passUnretained($0) } }
    }

    @exclusivity(unchecked) private var contextReference: Unmanaged<ManagedObjectContext>?

    /// Calls `body` with the object's context, borrowed: not retained and released around
    /// the call, which for a context that weak references point to (an asynchronous fetch's
    /// result, an observer) are two atomic operations through its side table, once per
    /// fault fired or value set. The context outlives the call (its queue runs it, and it
    /// clears this reference before it goes). Nil without a context.
    @inline(__always) @discardableResult
    func withContext<Result>(_ body: (ManagedObjectContext) throws -> Result) rethrows -> Result? {
        guard let contextReference else { return nil }
        return try contextReference._withUnsafeGuaranteedRef(body)
    }

    /// The committed state (``snapshot``), or, while the object is a fault of an
    /// asynchronous fetch, the row it waits to be filled with (``pendingRow``).
    private var rowStorage: RowSnapshot? {
        @inline(__always) get { storedRow }
        @inline(__always) set {
            // Values read through the snapshot stay what they were.
            takeValuesFromSnapshot()
            if waitsInKeptReading {
                waitsInKeptReading = false
                storedRow?.leaveKeptReading()
            }
            storedRow = newValue
        }
    }
    @exclusivity(unchecked) private var storedRow: RowSnapshot?
    /// What fetched objects do not need until they change: nothing for an object reading its
    /// snapshot (an object of 72 bytes is an 80-byte block, one of 88 a 96-byte block — 16 MB
    /// more for a fetch of a million objects), its own values alone for a new object (one
    /// array, no side object: a save of 100,000 new objects allocates 8 MB less), or a
    /// side object with its values and what tracks its changes.
    @exclusivity(unchecked) private var side: Side?

    /// What an object keeps beside its row (see ``side``); one reference either way.
    private enum Side {
        case values([AttributeValue])
        case extras(Extras)
    }

    private final class Extras {
        /// The values of ``values`` when they are not the snapshot's (an inserted or a
        /// changed object).
        @exclusivity(unchecked) var ownValues: [AttributeValue] = []
        /// The first 64 changed properties (``changedProperties``).
        @exclusivity(unchecked) var changedBits: UInt64 = 0
        @exclusivity(unchecked) var relationshipSets: [Int: RelationshipSet] = [:]
        @exclusivity(unchecked) var faultingBatch: FaultingBatch?
        @exclusivity(unchecked) var changedBeyond64: Set<Int> = []
        @exclusivity(unchecked) var missingProperties: PropertySet?
    }

    /// The side object, if the object has one.
    private var extras: Extras? {
        @inline(__always) get {
            if case .extras(let extras)? = side { return extras }
            return nil
        }
    }

    /// True when the object has a side object (what a change of a saved object makes).
    var hasSideObject: Bool { extras != nil }

    /// The side object, made (holding the object's own values) if there is none yet.
    private func madeExtras() -> Extras {
        if let extras { return extras }
        let made = Extras()
        made.ownValues = takeOwnValues()
        side = .extras(made)
        return made
    }

    /// True for an object reading its entity's default values: a new one that has no array of
    /// its own yet (made when a value is first set). A fetched object never makes one.
    private var holdsDefaultValues: Bool {
        @inline(__always) get { side == nil && !isFaultStorage && !valuesInSnapshot }
    }

    /// Lets the side object go once nothing is left in it (a batch
    /// given up): saved and refreshed objects go back to one allocation.
    private func dropEmptyExtras() {
        guard let extras, extras.ownValues.isEmpty, extras.changedBits == 0, extras.relationshipSets.isEmpty,
              extras.faultingBatch == nil, extras.changedBeyond64.isEmpty, extras.missingProperties == nil else { return }
        side = nil
    }

    /// The values of ``values`` when they are not the snapshot's; empty for a fault and for
    /// an object reading its snapshot's values.
    private var ownValues: [AttributeValue] {
        @inline(__always) get {
            switch side {
            case .values(let values)?: return values
            case .extras(let extras)?: return extras.ownValues
            case nil: return holdsDefaultValues ? entity.defaultValues : []
            }
        }
        set {
            switch side {
            case .extras(let extras)?:
                extras.ownValues = newValue
                if newValue.isEmpty { dropEmptyExtras() }
            case .values?:
                side = newValue.isEmpty ? nil : .values(newValue)
            case nil:
                if !newValue.isEmpty { side = .values(newValue) }
            }
        }
        _modify {
            if case .extras(let extras)? = side {
                yield &extras.ownValues
            } else {
                var values = takeOwnValues()
                defer { side = .values(values) }
                yield &values
            }
        }
    }

    /// The object's own values without a side object, moved out of ``side`` (nil after),
    /// so that a change does not copy the array: the defaults for a new object, empty for a
    /// fault and for an object reading its snapshot.
    @inline(__always)
    private func takeOwnValues() -> [AttributeValue] {
        let holdsDefaults = holdsDefaultValues
        if case .values(let values)? = side.take() { return values }
        return holdsDefaults ? entity.defaultValues : []
    }

    /// Properties whose value differs from the snapshot.
    var changedProperties: PropertySet {
        get {
            guard let extras else { return PropertySet() }
            return PropertySet(bits: extras.changedBits, beyond64: extras.changedBeyond64)
        }
        set {
            guard !newValue.isEmpty || extras != nil else { return }
            let extras = madeExtras()
            extras.changedBits = newValue.bits
            extras.changedBeyond64 = newValue.beyond64
            if newValue.isEmpty { dropEmptyExtras() }
        }
    }

    /// Relationships stored elsewhere (to-many, join tables), once loaded.
    var relationshipSets: [Int: RelationshipSet] {
        get { extras?.relationshipSets ?? [:] }
        set {
            guard !newValue.isEmpty || extras != nil else { return }
            madeExtras().relationshipSets = newValue
            if newValue.isEmpty { dropEmptyExtras() } else { contextStorage?.mayHoldRelationshipSets = true }
        }
        _modify {
            let extras = madeExtras()
            yield &extras.relationshipSets
            if !extras.relationshipSets.isEmpty { contextStorage?.mayHoldRelationshipSets = true }
        }
    }

    /// True when the object has loaded a relationship stored elsewhere (no dictionary made).
    var hasRelationshipSets: Bool { extras?.relationshipSets.isEmpty == false }

    /// For an object a fetch with ``FetchRequest/propertiesToFetch`` filled: the stored
    /// properties it did not read (they hold NULL until the whole row is loaded, at the first
    /// access to one of them or to the object as a whole). Nil for a whole object.
    var missingProperties: PropertySet? {
        get { extras?.missingProperties }
        set {
            guard newValue != nil || extras != nil else { return }
            madeExtras().missingProperties = newValue
            if newValue == nil { dropEmptyExtras() }
        }
    }

    /// The batch of a batched fetch this object is filled with, if any.
    var faultingBatch: FaultingBatch? {
        get { extras?.faultingBatch }
        set {
            guard newValue != nil || extras != nil else { return }
            madeExtras().faultingBatch = newValue
            if newValue == nil { dropEmptyExtras() }
        }
    }

    /// Current values, one per property; empty while the object is a fault. An object filled
    /// with a fetched row (``fill(with:)``) reads them from its snapshot until one changes:
    /// a million fetched objects then cost no array each.
    var values: PropertyValues {
        get {
            if valuesInSnapshot, let rowStorage { return rowStorage.values }
            return PropertyValues(ownValues)
        }
        set {
            ownValues = newValue.array
            valuesInSnapshot = false
        }
        _modify {
            takeValuesFromSnapshot()
            // Moved out, so that a change does not copy the array.
            if case .extras(let extras)? = side {
                var values = PropertyValues(extras.ownValues)
                extras.ownValues = []
                defer {
                    extras.ownValues = values.array
                    if values.isEmpty { dropEmptyExtras() }
                }
                yield &values
            } else {
                var values = PropertyValues(takeOwnValues())
                defer { side = values.isEmpty ? nil : .values(values.array) }
                yield &values
            }
        }
    }

    /// The current value of property `index`, read where it is kept (the snapshot's shared
    /// row, or the object's own values) without making a ``PropertyValues`` of them.
    @inline(__always)
    func currentValue(at index: Int) -> AttributeValue {
        if valuesInSnapshot, let rowStorage { return rowStorage.value(at: index) }
        return ownValues[index]
    }

    /// Property `index` as `Value` when the object reads it from a decoded row shared with
    /// its fetch, a fault filled first (no side object, hence no properties missing): the
    /// column's value, no ``AttributeValue`` made. Nil otherwise, and for NULL: the caller
    /// then reads ``primitiveValue(at:)``.
    @inline(__always)
    func sharedColumnValue<Value: ColumnReadable>(_ type: Value.Type, at index: Int) -> Value? {
        // The first read of a fault of a large fetch fills it from the row it kept, shared.
        if isFaultStorage { willAccessValues() }
        guard valuesInSnapshot, !isFaultStorage, case nil = side, let storedRow else { return nil }
        return storedRow.typedValue(type, at: index)
    }

    /// Sets the value of property `index` where the object keeps its own values, in place
    /// (an object reading its snapshot's values takes a copy of them first).
    @inline(__always)
    func setOwnValue(_ value: AttributeValue, at index: Int) {
        takeValuesFromSnapshot()
        if case .extras(let extras)? = side {
            extras.ownValues[index] = value
            return
        }
        // Taken out, changed and put back (the array's last use: moved, where ``ownValues``'s
        // `_modify` copies it back and releases the copy, two atomic operations per value).
        var values = takeOwnValues()
        values[index] = value
        side = .values(values)
    }

    /// The first change of an object that reads its values through its snapshot and has no
    /// side object (a fetched object): its values, copied once with `value` at `index`, and
    /// `index` marked changed, go in a new side object; `willChange` is called just before.
    /// True when the value changed, false when it already was `value`; nil, changing nothing,
    /// for any other object.
    ///
    /// One pass where the general path (``setOwnValue(_:at:)``, then ``changedProperties``)
    /// copies the values out, moves them into the side object it makes, and reads the snapshot
    /// again.
    @inline(__always)
    func changeSnapshotValue(_ value: AttributeValue, at index: Int, willChange: () -> Void) -> Bool? {
        guard valuesInSnapshot, side == nil, !isFaultStorage, let storedRow else { return nil }
        guard storedRow.value(at: index) != value else { return false }
        willChange()
        let extras = Extras()
        extras.ownValues = storedRow.values.array
        extras.ownValues[index] = value
        if index < 64 { extras.changedBits = 1 << UInt64(index) } else { extras.changedBeyond64 = [index] }
        side = .extras(extras)
        valuesInSnapshot = false
        return true
    }

    /// Gives the object its own copy of the values it reads through its snapshot, if it does.
    private func takeValuesFromSnapshot() {
        guard valuesInSnapshot, let rowStorage else { return }
        ownValues = rowStorage.values.array
        valuesInSnapshot = false
    }

    /// Makes the object hold the committed state `snapshot` and take its values: no longer a
    /// fault. Changed properties are left to the caller.
    func fill(with snapshot: consuming RowSnapshot) {
        if snapshot.isEncoded, let decoded = snapshot.decodedIfPossible { snapshot = decoded }
        if extras?.missingProperties != nil { missingProperties = nil }
        let shared = snapshot.isShared
        if !shared {
            ownValues = snapshot.values.array
        } else if !ownValues.isEmpty {
            ownValues = []
        }
        // Cleared first: changing the snapshot would copy out the values read through the old one.
        valuesInSnapshot = false
        rowStorage = snapshot
        valuesInSnapshot = shared
        isFaultStorage = false
    }

    /// The entity of the object.
    public var entity: EntityDescription { objectID.entity }

    /// The context the object lives in; nil once it was removed from it.
    public internal(set) var managedObjectContext: ManagedObjectContext? {
        get { contextStorage }
        set {
            if let newValue { join(newValue) } else { contextStorage = nil }
        }
    }

    /// Makes `context` the object's context (held unretained, as ``managedObjectContext``
    /// holds it). Registering a million fetched objects or inserting 100,000 new ones calls
    /// it once each: the context is borrowed, where the property's setter takes a reference
    /// to it for the call.
    @inline(__always)
    func join(_ context: ManagedObjectContext) {
        contextStorage = context
        if hasRelationshipSets { context.mayHoldRelationshipSets = true }
    }

    /// The committed state the context last saw (nil for inserted objects and faults).
    var snapshot: RowSnapshot? {
        get { isFaultStorage ? nil : rowStorage }
        set { rowStorage = newValue }
    }

    /// The row a fault of a large or asynchronous fetch was fetched with (``EncodedRows``, or
    /// a row of decoded rows waiting under a ``KeptReading``); it fills the fault unless the
    /// coordinator saw a newer one since (``RowCache/row(for:pending:)``).
    var pendingRow: RowSnapshot? {
        get { isFaultStorage ? rowStorage : nil }
        set {
            // Counted in before the row it replaces is counted off: a reading never drops to
            // no fault while one still waits under it.
            let enters = isFaultStorage && newValue?.enterKeptReading() == true
            rowStorage = newValue
            if enters { waitsInKeptReading = true }
        }
    }

    /// Fills a fault of a large or asynchronous fetch with the row it kept, when `isCurrent`
    /// accepts the fetch's reader (given its generation and start): a row of decoded rows as
    /// it is (``RowSnapshot/leavesKeptReading(ifCurrent:)``), a row of a batch that did not
    /// decode decoded now (``RowSnapshot/decodedKeptRow(if:)``). False leaves the fault as it
    /// was. The kept row is moved out rather than copied: a million faults fire after a large
    /// fetch, and each copy is a retain and a release.
    @inline(__always)
    func fillFromKeptRow(if isCurrent: (UInt64, UInt32) -> Bool) -> Bool {
        // A fault reads no value through its row: nothing to take out of it first.
        guard isFaultStorage, let kept = storedRow.take() else { return false }
        // A row of decoded rows, kept since registration: the object reads its values there
        // from now on, and no reference changes hands.
        if waitsInKeptReading, side == nil, kept.leavesKeptReading(ifCurrent: isCurrent) {
            storedRow = consume kept
            waitsInKeptReading = false
            valuesInSnapshot = true
            isFaultStorage = false
            return true
        }
        guard let row = kept.decodedKeptRow(if: isCurrent) else {
            storedRow = consume kept
            return false
        }
        fill(with: row)
        return true
    }

    /// Inserts a new object of `entity` into `context`, or, when `context` is nil, makes one
    /// that no context knows yet (with the model's default values), to insert later with
    /// ``ManagedObjectContext/insert(_:)``.
    ///
    /// Core Data equivalent: `init(entity:insertInto:)`. The object's class must be the
    /// entity's (``EntityDescription/managedObjectClass``); an object of another class is not
    /// inserted, and the context's next ``ManagedObjectContext/save()-306u2`` throws
    /// ``PostgresDataError/invalidRequest(_:)`` saying so.
    ///
    /// Fetches make their objects with it too, with no context, and a large fetch may make
    /// some off the context's queue: as Core Data advises, an override should do no more
    /// than its superclass; per-object set-up belongs in ``awakeFromFetch()`` and
    /// ``awakeFromInsert()``, which run on the context's queue.
    public required init(entity: EntityDescription, insertInto context: ManagedObjectContext?) {
        // A temporary number is drawn when the object is inserted (below, or later); fetched
        // objects get their row's ID at once, and so never draw one.
        // Its values are the entity's defaults (``holdsDefaultValues``) until one is set.
        self.objectID = .unassigned(for: entity)
        isFaultStorage = false
        guard let context else { return }
        // Fetches hand out an entity's objects as its class without a check per object.
        guard ObjectIdentifier(type(of: self)) == ObjectIdentifier(entity.managedObjectClass) else {
            let reason = "an object of class \(type(of: self)) cannot be an object of entity \(entity.name), whose class is \(entity.managedObjectClass); it was not inserted"
            context.recordingErrors { throw PostgresDataError.invalidRequest(reason) }
            return
        }
        context.insertNewlyMade(self, of: entity)
    }

    /// A fault for the row `id` names, not registered anywhere yet: the context that makes
    /// it (or takes it, ``ObjectsMadeAhead``) registers it.
    static func makeFault(_ id: ManagedObjectID) -> ManagedObject {
        let object = id.entity.managedObjectClass.init(entity: id.entity, insertInto: nil)
        object.isFaultStorage = true
        object.objectID = id
        return object
    }

    /// Inserts a new object of this class's entity into `context`.
    ///
    /// Core Data equivalent: `init(context:)`.
    public convenience init(context: ManagedObjectContext) {
        let entity = Self.entity(in: context)
        self.init(entity: entity, insertInto: context)
    }

    /// The entity of this class, as `@Entity` describes it. ``ManagedObject`` itself has none:
    /// create generic objects with ``init(entity:insertInto:)``.
    open class func entity() -> EntityDescription {
        preconditionFailure("\(self) has no entity description: declare it with @Entity, or create it with init(entity:insertInto:)")
    }

    /// The key paths of the class's persistent properties with their names; `@Entity`
    /// generates it, so Foundation `#Predicate`s and `SortDescriptor`s translate to key names.
    open class var _$keyPathNames: [AnyKeyPath: String] { [:] }

    /// The keys the class has a `validate<Key>` rule for; `@Entity` generates it.
    open class var _$validatedKeys: [String] { [] }

    /// Runs the class's `validate<Key>` rule for `key` on `value`; `@Entity` generates it.
    /// Use ``validateValue(_:forKey:)``, which checks the model's rules first.
    open func _$validate(_ key: String, _ value: inout AttributeValue) throws {}

    private static func entity(in context: ManagedObjectContext) -> EntityDescription {
        // The context's model's own description: the class's may belong to another model.
        if self != ManagedObject.self {
            // The class's own description, unless the model holds a copy of it (a class in two models).
            let own = entity()
            if own.owner == context.modelNumber { return own }
            return context.persistentStoreCoordinator.managedObjectModel.entity(for: self) ?? own
        }
        preconditionFailure("ManagedObject(context:) needs a subclass declared with @Entity; use init(entity:insertInto:)")
    }

    /// True while the object's values have not been loaded; touching a property loads them.
    public var isFault: Bool { isFaultStorage }
    /// True when the object was inserted and not yet saved.
    public var isInserted: Bool { isInsertedStorage }
    /// True when the object was deleted and the deletion not yet saved.
    public var isDeleted: Bool { isDeletedStorage }
    /// True when the object has unsaved changes to its properties.
    public var isUpdated: Bool {
        !isInsertedStorage && !isDeletedStorage && (!changedProperties.isEmpty || hasRelationshipChanges)
    }
    /// True when the object was inserted, updated or deleted and not yet saved.
    public var hasChanges: Bool { isInsertedStorage || isDeletedStorage || isUpdated }

    /// The version of the stored row the object's values come from — the one its next save
    /// checks (PostgreSQL's `xmin`) — or nil for an object not saved yet. Reading it fills a
    /// fault. It changes with every save of the row, so a server can send it as an `ETag` and
    /// refuse (HTTP 409 or 412) a change whose `If-Match` names an older one.
    ///
    /// No Core Data equivalent: Core Data keeps the snapshot's version to itself.
    public var rowVersion: UInt32? {
        guard !isInsertedStorage, objectID.primaryKey != nil else { return nil }
        willAccessValues()
        return snapshot?.version
    }

    var hasRelationshipChanges: Bool {
        relationshipSets.values.contains { !$0.added.isEmpty || !$0.removed.isEmpty || $0.order != nil }
    }

    // MARK: Identity

    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    open var description: String {
        if isFaultStorage { return "<\(entity.name) \(objectID): fault>" }
        let pairs = entity.properties.enumerated().compactMap { index, property -> String? in
            guard case .attribute = property, index < values.count else { return nil }
            return "\(property.name)=\(values[index].anyValue.map { "\($0)" } ?? "nil")"
        }
        return "<\(entity.name) \(objectID): \(pairs.joined(separator: ", "))>"
    }

    // MARK: Lifecycle hooks

    /// Called once, when the object is first inserted into a context: set initial values
    /// here (a creation date, a generated code). Call `super`.
    ///
    /// Core Data equivalent: `awakeFromInsert()`.
    open func awakeFromInsert() {}

    /// Called after the object's values were read from the store: when a fetch registers it
    /// with its values, and each time a fault fills. Set derived, transient state here; a
    /// value set here is a change to save. Call `super`.
    ///
    /// Core Data equivalent: `awakeFromFetch()`.
    open func awakeFromFetch() {}

    /// Called when the object's values were replaced other than by a fetch: a rollback, a
    /// refresh that kept its changes, a merge policy's resolution. Call `super`.
    ///
    /// Core Data equivalent: `awake(fromSnapshotEvents:)`.
    open func awake(fromSnapshotEvents events: SnapshotEventType) {}

    /// Called at the start of a save on every object it writes (inserted, updated, deleted),
    /// before validation. Changes made here are saved; the hook runs again only on objects
    /// that some hook changed, so set a value only when it differs. Call `super`.
    ///
    /// Core Data equivalent: `willSave()`.
    open func willSave() {}

    /// Called after a save on every object it wrote, the object's values now the saved ones
    /// (a deleted object has left the context). Call `super`.
    ///
    /// Core Data equivalent: `didSave()`.
    open func didSave() {}

    /// Called when the object is deleted, before its relationships' delete rules run. Call `super`.
    ///
    /// Core Data equivalent: `prepareForDeletion()`.
    open func prepareForDeletion() {}

    /// Called before the object turns into a fault (a refresh without its changes kept),
    /// while its values are still readable. Call `super`.
    ///
    /// Core Data equivalent: `willTurnIntoFault()`.
    open func willTurnIntoFault() {}

    /// Called after the object turned into a fault: release what `awakeFromFetch` made. Call `super`.
    ///
    /// Core Data equivalent: `didTurnIntoFault()`.
    open func didTurnIntoFault() {}

    // MARK: Validation hooks

    /// Checks the object before an insert is saved; override to add rules (call `super`).
    ///
    /// Core Data equivalent: `validateForInsert()`.
    open func validateForInsert() throws { try validateProperties() }
    /// Checks the object before an update is saved; override to add rules (call `super`).
    open func validateForUpdate() throws { try validateProperties() }
    /// Checks the object before a deletion is saved; `deny` rules are checked here.
    open func validateForDelete() throws { try managedObjectContext?.validateDeleteRules(of: self) }

    /// Checks every attribute's rules and every required relationship.
    func validateProperties() throws {
        willAccessValues()
        var failures: [ValidationFailure] = []
        let values = self.values
        let entity = self.entity
        // The usual object passes every plain check: only the other rules are asked then, and
        // every rule is when one fails (to describe it, in the attributes' order).
        let passesPlainChecks = values.array.withUnsafeBufferPointer { values in
            entity.plainAttributeChecks.allSatisfy { $0.index < values.count && $0.check.passes(values[$0.index]) }
        }
        for (index, rule) in passesPlainChecks ? entity.otherAttributeRules : entity.attributeRules {
            var reasons = rule.violations(of: values[index])
            if reasons.isEmpty && !rule.predicates.isEmpty { reasons = predicateViolations(rule, at: index) }
            for reason in reasons {
                failures.append(ValidationFailure(objectID: objectID, key: rule.attribute.name, reason: reason))
            }
        }
        if !type(of: self)._$validatedKeys.isEmpty {
            failures += customValidationFailures(skipping: Set(failures.compactMap(\.key)))
        }
        for index in entity.relationshipIndices {
            switch entity.properties[index] {
            case .attribute:
                break
            case .relationship(let relationship):
                if !relationship.isToMany, !relationship.isOptional, case .foreignKey = entity.storage(of: index),
                   values[index].isNull {
                    failures.append(ValidationFailure(objectID: objectID, key: relationship.name,
                                                      reason: "is required (not optional) but is nil"))
                }
                if relationship.isToMany, relationship.minCount > 0 || relationship.maxCount > 0,
                   let context = managedObjectContext {
                    let count = context.relatedIDs(of: self, at: index).count
                    if relationship.minCount > 0 && count < relationship.minCount {
                        failures.append(ValidationFailure(objectID: objectID, key: relationship.name,
                                                          reason: "has \(count) objects, fewer than the minimum \(relationship.minCount)"))
                    }
                    if relationship.maxCount > 0 && count > relationship.maxCount {
                        failures.append(ValidationFailure(objectID: objectID, key: relationship.name,
                                                          reason: "has \(count) objects, more than the maximum \(relationship.maxCount)"))
                    }
                }
            }
        }
        if !failures.isEmpty { throw PostgresDataError.validation(failures) }
    }

    // MARK: Faulting

    /// Fills a fault before its values are read.
    @inline(__always)
    final func willAccessValues() {
        if isFaultStorage {
            fulfillFault()
        } else if extras?.missingProperties != nil {
            loadMissingProperties()
        }
    }

    /// Loads the whole row of an object a fetch filled only partly: it becomes a fault again,
    /// filled as any fault is (row cache, query, a row gone reading as deleted).
    private func loadMissingProperties() {
        missingProperties = nil
        guard managedObjectContext != nil else { return }
        values = []
        snapshot = nil
        isFaultStorage = true
        fulfillFault()
    }

    private func fulfillFault() {
        guard withContext({ $0.fulfillFault(self) }) != nil else {
            // A fault without a context has nothing to read: it reads its default values.
            values = PropertyValues(entity.placeholderValues)
            isFaultStorage = false
            return
        }
    }

    /// Fills the object's values now if it is a fault, throwing what a property access would
    /// only record: ``PostgresDataError/objectNotFound(_:)`` when its row is gone, the
    /// store's error when it fails. Call it on the context's queue.
    ///
    /// Core Data has no equivalent (a fault fills on access, and a missing row raises);
    /// `try context.existingObject(with: object.objectID)` comes closest.
    public func load() throws {
        guard isFaultStorage else { return }
        guard let context = managedObjectContext else { throw PostgresDataError.noContext(objectID) }
        try BlockingBridge.run { try await context.load(self) }
    }

    /// Fills the object's values now if it is a fault, as ``load()`` does, suspending the
    /// calling task while the database is asked.
    public func load() async throws {
        guard isFaultStorage else { return }
        guard let context = managedObjectContext else { throw PostgresDataError.noContext(objectID) }
        try await context.load(self)
    }
}

/// A set of property indices (the changed properties of an object).
struct PropertySet: Sendable, Hashable, Sequence {
    private(set) var bits: UInt64 = 0
    private(set) var beyond64: Set<Int> = []

    init() {}

    init(bits: UInt64, beyond64: Set<Int>) {
        self.bits = bits
        self.beyond64 = beyond64
    }

    var isEmpty: Bool { bits == 0 && beyond64.isEmpty }

    func contains(_ index: Int) -> Bool {
        index < 64 ? bits & (1 << UInt64(index)) != 0 : beyond64.contains(index)
    }

    mutating func insert(_ index: Int) {
        if index < 64 { bits |= 1 << UInt64(index) } else { beyond64.insert(index) }
    }

    mutating func remove(_ index: Int) {
        if index < 64 { bits &= ~(1 << UInt64(index)) } else { beyond64.remove(index) }
    }

    mutating func removeAll() {
        bits = 0
        beyond64 = []
    }

    func makeIterator() -> IndexingIterator<[Int]> {
        var indices: [Int] = []
        var remaining = bits
        while remaining != 0 {
            let index = remaining.trailingZeroBitCount
            indices.append(index)
            remaining &= remaining - 1
        }
        return (indices + beyond64.sorted()).makeIterator()
    }
}

/// A loaded relationship stored outside the object's row: the related IDs, and for join
/// tables the rows to add and remove at the next save.
struct RelationshipSet {
    var ids: [ManagedObjectID]
    var added: Set<ManagedObjectID> = []
    var removed: Set<ManagedObjectID> = []
    /// For an ordered relationship: the order the object was given, not saved yet.
    var order: [ManagedObjectID]? = nil
    /// For an ordered relationship: the stored position of each of `ids`, when known.
    var positions: [Double]? = nil
}
