import PostgresClient

/// Deletes the matching rows of an entity in one `DELETE … RETURNING id` statement on the
/// server, without loading them into a context.
///
/// Core Data equivalent: `NSBatchDeleteRequest`. The delete rules are honoured by the
/// database through the foreign keys the model generated: `cascade` deletes the related
/// rows, `nullify` clears their reference, `deny` fails the whole statement with an error
/// naming the relationship (nothing is deleted). With ``BatchDeleteRequestResultType/objectIDs``
/// the rows the rules reach are read first, in the same transaction, so contexts can be
/// told of them too. Rules kept on the to-one side (`Item.list` with `cascade`) and on
/// many-to-many relationships are applied by contexts only; a batch delete removes just the
/// join rows of many-to-many relationships.
///
/// ```swift
/// var delete = BatchDeleteRequest(fetchRequest: FetchRequest<Item>(predicate: try FetchPredicate(format: "done == YES")))
/// delete.resultType = .objectIDs
/// delete.contextsToMerge = [container.viewContext]
/// let result = try await context.execute(delete)
/// ```
public struct BatchDeleteRequest: Sendable {
    /// The entity whose rows are deleted.
    public var entityName: String
    /// Which rows (all when nil and ``objectIDs`` is nil).
    public var predicate: FetchPredicate?
    /// The rows to delete, when given by ID.
    public var objectIDs: [ManagedObjectID]?
    /// What the result carries (default: status only).
    public var resultType: BatchDeleteRequestResultType = .statusOnly
    /// Contexts told of the change after it committed: deleted objects leave them, objects
    /// whose reference was cleared are refreshed.
    public var contextsToMerge: [ManagedObjectContext] = []

    /// The order in which ``fetchLimit`` and ``fetchOffset`` choose rows.
    public var sortDescriptors: [FetchSortDescriptor] = []
    /// At most this many rows are deleted, the first in ``sortDescriptors`` order (0: all).
    public var fetchLimit = 0
    /// This many matching rows, the first in ``sortDescriptors`` order, are kept.
    public var fetchOffset = 0
    /// Whether rows of the entity's sub-entities are deleted too (the default).
    public var includesSubentities = true

    /// Deletes what a fetch request matches: its entity, predicate, and — as Core Data
    /// honours them — its sort descriptors, limit, offset and `includesSubentities`.
    public init<Result>(fetchRequest: FetchRequest<Result>) {
        self.entityName = fetchRequest.entityName
        self.predicate = fetchRequest.predicate
        self.sortDescriptors = fetchRequest.sortDescriptors
        self.fetchLimit = fetchRequest.fetchLimit
        self.fetchOffset = fetchRequest.fetchOffset
        self.includesSubentities = fetchRequest.includesSubentities
    }

    /// Deletes the rows of `objectIDs`, which must all belong to one entity.
    public init(objectIDs: [ManagedObjectID]) {
        self.entityName = objectIDs.first?.entity.name ?? ""
        self.objectIDs = objectIDs
    }

    /// Which rows: a condition over alias `t` and its bindings.
    func condition(for entity: EntityDescription) throws -> (String?, [String], PostgresBindings) {
        if let objectIDs {
            guard objectIDs.allSatisfy({ $0.entity === entity }) else {
                throw PostgresDataError.invalidRequest("a batch delete takes object IDs of one entity; these belong to \(Set(objectIDs.map(\.entity.name)).sorted().joined(separator: ", "))")
            }
            let keys = objectIDs.compactMap(\.primaryKey)
            guard keys.count == objectIDs.count else {
                throw PostgresDataError.invalidRequest("a batch delete cannot delete unsaved objects (temporary IDs): delete them in their context")
            }
            return ("t.\"id\" = ANY($1)", [], try PostgresBindings(keys))
        }
        if fetchLimit > 0 || fetchOffset > 0 || !includesSubentities {
            // A window of the matching rows: chosen in order by a subquery.
            var window = FetchRequest<ManagedObjectID>(entityName: entityName, predicate: predicate, sortDescriptors: sortDescriptors)
            window.fetchLimit = max(0, fetchLimit)
            window.fetchOffset = max(0, fetchOffset)
            window.includesSubentities = includesSubentities
            let (sql, bindings) = try window.sql(for: entity, columns: "t.\"id\"")
            return ("t.\"id\" IN (\(sql))", [], bindings)
        }
        var compiler = PredicateSQL(entity: entity)
        let condition = try [predicate.map { try compiler.condition($0.node) }, entity.discriminatorCondition(alias: "t")].conjunction
        return (condition, compiler.joins, compiler.bindings)
    }
}
