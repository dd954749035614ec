import PostgresClient

/// What kind of results a fetch returns. Core Data equivalent: `NSFetchRequestResultType`.
public enum FetchRequestResultType: Sendable, Hashable {
    /// Managed objects registered in the context.
    case managedObject
    /// Object IDs only (`Sendable`: hand them to other contexts).
    case managedObjectID
    /// The number of matching rows.
    case count
}

/// How fetched objects are ordered: a key path (through to-one relationships), the
/// direction, and optionally case-insensitively. NULL sorts first ascending, as in Core Data.
///
/// Core Data equivalent: `NSSortDescriptor(key:ascending:)`.
public struct FetchSortDescriptor: Sendable, Hashable {
    /// The key path sorted by (`name`, `list.title`).
    public var key: String
    /// Smallest first when true.
    public var ascending: Bool
    /// Compare strings without regard to case (`lower(…)`).
    public var caseInsensitive: Bool

    /// A sort by `key`.
    public init(key: String, ascending: Bool = true, caseInsensitive: Bool = false) {
        self.key = key
        self.ascending = ascending
        self.caseInsensitive = caseInsensitive
    }
}

/// A description of objects to fetch from the store.
///
/// Core Data equivalent: `NSFetchRequest`. The predicate and sort descriptors compile to one
/// parameterised `SELECT` (to-one key paths join, to-many ones become subqueries).
///
/// ```swift
/// var request = FetchRequest<Item>(predicate: try FetchPredicate(format: "done == NO AND weight >= %@", 10))
/// request.sortDescriptors = [FetchSortDescriptor(key: "name")]
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
    /// Objects, IDs or a count.
    public var resultType: FetchRequestResultType

    /// A request for the objects (or IDs) of `entityName`.
    public init(entityName: String, predicate: FetchPredicate? = nil, sortDescriptors: [FetchSortDescriptor] = []) {
        self.entityName = entityName
        self.predicate = predicate
        self.sortDescriptors = sortDescriptors
        self.resultType = Result.self == ManagedObjectID.self ? .managedObjectID : .managedObject
    }

    /// The SQL of the request: `SELECT … FROM table AS t [JOIN …] WHERE … ORDER BY … LIMIT … OFFSET …`.
    func sql(for entity: EntityDescription, columns: String) throws -> (String, PostgresBindings) {
        var compiler = PredicateSQL(entity: entity)
        let condition = try predicate.map { try compiler.condition($0.node) }
        var order: [String] = []
        if resultType != .count {
            for descriptor in sortDescriptors {
                let (sql, type) = try compiler.sortExpression(descriptor.key)
                let expression = descriptor.caseInsensitive && type == .string ? "lower(\(sql))" : sql
                order.append("\(expression) \(descriptor.ascending ? "ASC NULLS FIRST" : "DESC NULLS LAST")")
            }
            order.append("t.\"id\"")
        }
        var sql = "SELECT \(columns) FROM \(quoteIdentifier(entity.tableName)) AS t"
        for join in compiler.joins { sql += " " + join }
        if let condition { sql += " WHERE \(condition)" }
        var bindings = compiler.bindings
        if !order.isEmpty { sql += " ORDER BY " + order.joined(separator: ", ") }
        if resultType != .count {
            if fetchLimit > 0 {
                try bindings.append(Int64(fetchLimit))
                sql += " LIMIT $\(bindings.count)"
            }
            if fetchOffset > 0 {
                try bindings.append(Int64(fetchOffset))
                sql += " OFFSET $\(bindings.count)"
            }
        }
        return (sql, bindings)
    }
}

extension FetchRequest where Result: ManagedObject {
    /// A request for the objects of `Result`'s entity.
    public init(predicate: FetchPredicate? = nil, sortDescriptors: [FetchSortDescriptor] = []) {
        self.init(entityName: Result.entity().name, predicate: predicate, sortDescriptors: sortDescriptors)
    }
}

extension ManagedObjectContext {
    /// Runs a fetch request: objects (registered in this context; objects already registered
    /// keep their unsaved changes) or object IDs.
    ///
    /// Core Data equivalent: `fetch(_:)`.
    public func fetch<Result>(_ request: FetchRequest<Result>) throws -> [Result] {
        assertOnQueue()
        let entity = try entity(named: request.entityName)
        let coordinator = persistentStoreCoordinator
        switch request.resultType {
        case .managedObjectID:
            let (sql, bindings) = try request.sql(for: entity, columns: "t.\"id\"")
            let keys = try runStore { try await coordinator.fetchIntegers(sql: sql, bindings: bindings) }
            let ids = keys.map { ManagedObjectID(entity: entity, primaryKey: $0) }
            guard let result = ids as? [Result] else {
                throw PostgresDataError.invalidRequest("a request with result type managedObjectID returns ManagedObjectID, not \(Result.self)")
            }
            return result
        case .managedObject:
            let (sql, bindings) = try request.sql(for: entity, columns: PersistentStoreCoordinator.selectList(entity))
            let rows = try runStore { try await coordinator.fetchSnapshots(sql: sql, bindings: bindings, entity: entity) }
            let objects = register(rows, entity: entity)
            guard let result = objects as? [Result] else {
                throw PostgresDataError.invalidRequest("\(request.entityName)'s objects are \(entity.managedObjectClass), not \(Result.self)")
            }
            return result
        case .count:
            return []
        }
    }

    /// The number of objects a request would return.
    ///
    /// Core Data equivalent: `count(for:)`.
    public func count<Result>(for request: FetchRequest<Result>) throws -> Int {
        assertOnQueue()
        let entity = try entity(named: request.entityName)
        var countRequest = request
        countRequest.resultType = .count
        let (sql, bindings) = try countRequest.sql(for: entity, columns: "count(*)")
        let coordinator = persistentStoreCoordinator
        let counts = try runStore { try await coordinator.fetchIntegers(sql: sql, bindings: bindings) }
        let stored = Int(counts.first ?? 0)
        // Unsaved inserts and deletes count only without a predicate until predicates
        // evaluate in memory (includesPendingChanges).
        let pendingInserted = request.predicate == nil ? insertedSet.values.filter { $0.entity === entity }.count : 0
        let pendingDeleted = request.predicate == nil ? deletedSet.values.filter { $0.entity === entity }.count : 0
        return max(0, stored + pendingInserted - pendingDeleted - request.fetchOffset)
            .clamped(to: request.fetchLimit)
    }

    func entity(named name: String) throws -> EntityDescription {
        guard let entity = persistentStoreCoordinator.managedObjectModel.entitiesByName[name] else {
            throw PostgresDataError.invalidRequest("the model has no entity \"\(name)\"; its entities are \(persistentStoreCoordinator.managedObjectModel.entities.map(\.name).joined(separator: ", "))")
        }
        return entity
    }
}

extension Int {
    fileprivate func clamped(to limit: Int) -> Int { limit > 0 ? Swift.min(self, limit) : self }
}
