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

/// A description of objects to fetch from the store.
///
/// Core Data equivalent: `NSFetchRequest`. This first version fetches every object of an
/// entity in primary-key order, with a limit and offset; predicates and sort descriptors
/// come with the fetch-request work.
///
/// ```swift
/// let items = try context.fetch(FetchRequest<Item>())
/// let ids = try context.fetch(FetchRequest<ManagedObjectID>(entityName: "Item"))
/// ```
public struct FetchRequest<Result>: Sendable {
    /// The entity fetched.
    public var entityName: String
    /// The most results to return (0: no limit).
    public var fetchLimit: Int = 0
    /// How many results to skip.
    public var fetchOffset: Int = 0
    /// Objects, IDs or a count.
    public var resultType: FetchRequestResultType

    /// A request for the objects (or IDs) of `entityName`.
    public init(entityName: String) {
        self.entityName = entityName
        self.resultType = Result.self == ManagedObjectID.self ? .managedObjectID : .managedObject
    }

    /// The SQL of the request: `SELECT … FROM table ORDER BY id LIMIT … OFFSET …`.
    func sql(for entity: EntityDescription, columns: String) -> (String, PostgresBindings) {
        var sql = "SELECT \(columns) FROM \(quoteIdentifier(entity.tableName)) AS t"
        var bindings = PostgresBindings()
        if resultType != .count {
            sql += " ORDER BY t.\"id\""
            if fetchLimit > 0 {
                try? bindings.append(Int64(fetchLimit))
                sql += " LIMIT $\(bindings.count)"
            }
            if fetchOffset > 0 {
                try? bindings.append(Int64(fetchOffset))
                sql += " OFFSET $\(bindings.count)"
            }
        }
        return (sql, bindings)
    }
}

extension FetchRequest where Result: ManagedObject {
    /// A request for the objects of `Result`'s entity.
    public init() {
        self.init(entityName: Result.entity().name)
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
            let (sql, bindings) = request.sql(for: entity, columns: "t.\"id\"")
            let keys = try runStore { try await coordinator.fetchIntegers(sql: sql, bindings: bindings) }
            let ids = keys.map { ManagedObjectID(entity: entity, primaryKey: $0) }
            guard let result = ids as? [Result] else {
                throw PostgresDataError.invalidRequest("a request with result type managedObjectID returns ManagedObjectID, not \(Result.self)")
            }
            return result
        case .managedObject:
            let (sql, bindings) = request.sql(for: entity, columns: PersistentStoreCoordinator.selectList(entity))
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
        let (sql, bindings) = countRequest.sql(for: entity, columns: "count(*)")
        let coordinator = persistentStoreCoordinator
        let counts = try runStore { try await coordinator.fetchIntegers(sql: sql, bindings: bindings) }
        let stored = Int(counts.first ?? 0)
        let pendingInserted = insertedSet.values.filter { $0.entity === entity }.count
        let pendingDeleted = deletedSet.values.filter { $0.entity === entity }.count
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
