import Foundation
import PostgresClient

/// Changes the matching rows of an entity in one `UPDATE … SET … WHERE … RETURNING …`
/// statement on the server, without loading them into a context.
///
/// Core Data equivalent: `NSBatchUpdateRequest`. Unlike Core Data's, constants are checked
/// against the model's rules before the statement is sent, the database enforces the rest
/// (CHECK, NOT NULL and foreign-key constraints: a violating batch changes nothing and the
/// error names the constraint, key and rule), and the rows' versions change, so a context
/// still holding old values gets a merge conflict when it saves them instead of overwriting.
///
/// ```swift
/// var update = BatchUpdateRequest(entity: Item.self, predicate: try FetchPredicate(format: "done == NO"))
/// update.propertiesToUpdate = ["weight": try .expression("weight + 1"), "notes": nil]
/// update.resultType = .updatedObjectIDs
/// update.contextsToMerge = [container.viewContext]     // refreshed after the update
/// let result = try await container.newBackgroundContext().execute(update)
/// ```
public struct BatchUpdateRequest: Sendable {
    /// The entity whose rows change.
    public var entityName: String
    /// Which rows (all when nil).
    public var predicate: FetchPredicate?
    /// The new value of each key.
    public var propertiesToUpdate: [String: BatchUpdateValue]
    /// What the result carries (default: status only).
    public var resultType: BatchUpdateRequestResultType = .statusOnly
    /// Contexts told of the change after it committed (updated objects refreshed on their
    /// next use), as ``ManagedObjectContext/mergeChanges(fromRemoteContextSave:into:)`` does.
    public var contextsToMerge: [ManagedObjectContext] = []

    /// An update of the rows of `entityName` matching `predicate`.
    public init(entityName: String, predicate: FetchPredicate? = nil, propertiesToUpdate: [String: BatchUpdateValue] = [:]) {
        self.entityName = entityName
        self.predicate = predicate
        self.propertiesToUpdate = propertiesToUpdate
    }

    /// An update of the rows of `entity`'s table matching `predicate`.
    public init<Entity: ManagedObject>(entity: Entity.Type, predicate: FetchPredicate? = nil,
                                       propertiesToUpdate: [String: BatchUpdateValue] = [:]) {
        self.init(entityName: entity.entity().name, predicate: predicate, propertiesToUpdate: propertiesToUpdate)
    }

    static func describe(_ value: AttributeValue) -> String {
        switch value {
        case .string(let string): "\"\(string)\""
        default: "\(value.anyValue.map { "\($0)" } ?? "nil")"
        }
    }
}
