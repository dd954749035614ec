import PostgresClient

/// A description of objects to fetch from the store.
///
/// Core Data equivalent: `NSFetchRequest`. The predicate and sort descriptors compile to one
/// parameterised `SELECT` (to-one key paths join, to-many ones become subqueries).
///
/// ```swift
/// var request = FetchRequest<Item>(predicate: try FetchPredicate(format: "done == NO AND weight >= %@", 10))
/// request.sortDescriptors = [FetchSortDescriptor(key: "name")]
/// request.fetchBatchSize = 100                      // IDs now, rows 100 at a time as they are used
/// let items = try context.fetch(request)
/// let ids = try context.fetch(FetchRequest<ManagedObjectID>(entityName: "Item"))
/// ```
public struct FetchRequest<Result>: Sendable {
    /// The entity fetched.
    public var entityName: String
    /// Which objects match (all when nil).
    public var predicate: FetchPredicate?
    /// The order of the results; primary-key order after them.
    public var sortDescriptors: [FetchSortDescriptor] = []
    /// The most results to return (0: no limit).
    public var fetchLimit: Int = 0
    /// How many results to skip.
    public var fetchOffset: Int = 0
    /// When more than 0, the fetch reads only the IDs of the matching rows; the returned
    /// objects are faults filled this many at a time (one query per batch) as they are used,
    /// and the context keeps only the last few batches filled.
    public var fetchBatchSize: Int = 0
    /// Objects, IDs, dictionaries or a count.
    public var resultType: FetchRequestResultType
    /// For dictionary results: the key paths and aggregates to return (all attributes and
    /// to-one relationships when nil). For object results: the attributes and to-one
    /// relationships to read; the objects are partially filled, as in Core Data — the
    /// properties named (and the sort keys) read without a query, and the first access to
    /// another loads the whole row. Partial rows never enter the coordinator's row cache.
    /// Batched, asynchronous and hierarchy fetches read whole rows.
    ///
    /// Core Data equivalent: `propertiesToFetch`.
    public var propertiesToFetch: [FetchedProperty]?
    /// For dictionary results: the key paths rows are grouped by (`GROUP BY`); every key
    /// path of ``propertiesToFetch`` must be one of them.
    public var propertiesToGroupBy: [String] = []
    /// For grouped dictionary results: which groups are returned (`HAVING`). Its key paths
    /// name expressions of ``propertiesToFetch`` (`total > 10`) or grouped key paths.
    ///
    /// Core Data equivalent: `havingPredicate`.
    public var havingPredicate: FetchPredicate?
    /// For dictionary results: drop duplicate dictionaries (`SELECT DISTINCT`).
    public var returnsDistinctResults = false
    /// Relationships (key paths through relationships: `list`, `tags`, `list.owner`) whose
    /// objects are fetched with the results: one query per relationship, never one per object.
    public var relationshipKeyPathsForPrefetching: [String] = []
    /// When true (the default, as in Core Data) fetched objects are faults whose rows wait in
    /// the coordinator's row cache, so the first access costs no query, and other contexts
    /// faulting the same rows read them there too. Asynchronous fetches and batch walks give
    /// each fault its row as libpq received it (binary), decoded when the fault fires, so a
    /// million faults cost no value decoding and no row-cache entries until used; a row saved
    /// or merged since through the coordinator still reaches its fault. When false the objects hold their values
    /// at once and keep their rows to themselves (no row-cache entry per row: the cheaper way
    /// to fetch many objects you will read anyway); other contexts read those rows from the
    /// database.
    public var returnsObjectsAsFaults = true
    /// When true, registered objects without unsaved changes whose rows changed since they
    /// were read (the fetch reads each row's version) take the fetched values; when false
    /// (the default, as in Core Data), objects already holding values keep them.
    ///
    /// Core Data equivalent: `shouldRefreshRefetchedObjects`.
    public var shouldRefreshRefetchedObjects = false
    /// When false, only IDs are read and objects are plain faults (one query when used).
    public var includesPropertyValues = true
    /// When true (the default), the context's unsaved inserts, updates and deletes are
    /// reflected: inserted objects that match are included, deleted ones left out, and
    /// changed ones judged on their current values. Dictionary results read only the store.
    public var includesPendingChanges = true
    /// When true (the default), a fetch of an entity with sub-entities also returns their
    /// objects, each of its own class; when false, only the entity's own.
    ///
    /// Core Data equivalent: `includesSubentities`.
    public var includesSubentities = true
    /// When true, the fetch (with its prefetches) may run on the store's read replica
    /// (``PersistentStoreCoordinator/StoreOptions/readReplicaConfiguration``), subject to the
    /// context's ``ManagedObjectContext/replicaConsistency``; the objects then hold their
    /// rows (the replica's rows may be older than those of the row cache, so they are kept
    /// out of it). Read-only contexts read from the replica whatever this says. Default false.
    ///
    /// No Core Data equivalent.
    public var allowsReadingFromReplica = false

    /// A request for the objects (or IDs, dictionaries or the count, by `Result`: an
    /// object class, ``ManagedObjectID``, ``FetchedDictionary`` or `[String: AttributeValue]`,
    /// or `Int`) of `entityName`.
    public init(entityName: String, predicate: FetchPredicate? = nil, sortDescriptors: [FetchSortDescriptor] = []) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        if Result.self == ManagedObjectID.self {
            self.resultType = .managedObjectID
        } else if Result.self == FetchedDictionary.self || Result.self == [String: AttributeValue].self {
            self.resultType = .dictionary
        } else if Result.self == Int.self {
            self.resultType = .count
        } else {
            self.resultType = .managedObject
        }
    }
}

extension FetchRequest where Result: ManagedObject {
    /// A request for the objects of `Result`'s entity.
    public init(predicate: FetchPredicate? = nil, sortDescriptors: [FetchSortDescriptor] = []) {
        self.init(entityName: Result.entity().name, predicate: predicate, sortDescriptors: sortDescriptors)
    }
}
