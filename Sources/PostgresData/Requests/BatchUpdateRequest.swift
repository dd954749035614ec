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

    /// The statement: `UPDATE t SET … WHERE … RETURNING …`, or, for a count,
    /// `WITH u AS (UPDATE … RETURNING 1) SELECT count(*) FROM u`; with `history`, wrapped so
    /// that it also records the rows in persistent history.
    func plan(for entity: EntityDescription, returningIDs: Bool, history: HistoryRecord.Origin? = nil) throws -> BatchUpdatePlan {
        guard !propertiesToUpdate.isEmpty else {
            throw PostgresDataError.invalidRequest("a batch update of \(entity.name) needs propertiesToUpdate")
        }
        var values = PredicateSQL(entity: entity)
        var assignments: [String] = []
        var returned: [BatchUpdatePlan.Column] = []
        for key in propertiesToUpdate.keys.sorted() {
            let value = propertiesToUpdate[key]!.value
            guard let index = entity.propertyIndex(named: key) else {
                throw PredicateSQL.unknownKey(key, in: entity, path: key)
            }
            let column = quoteIdentifier(entity.columnName(of: index))
            switch entity.properties[index] {
            case .attribute(let attribute):
                let type = attribute.attributeType
                if case .constant(let constant) = value {
                    let converted = constant.isNull ? constant : try PredicateSQL.convert(constant, to: type, key: key)
                    let broken = attribute.violations(of: converted)
                    guard broken.isEmpty else {
                        throw PostgresDataError.invalidRequest("batch update of \(entity.name): \(key) = \(Self.describe(converted)) breaks the model (\(key) \(broken.joined(separator: "; "))); nothing was sent")
                    }
                }
                let (sql, valueType) = try values.value(value, expected: type, key: key)
                if let valueType, valueType != type, !(valueType.isNumeric && type.isNumeric) {
                    throw PostgresDataError.invalidRequest("batch update of \(entity.name).\(key): \(key) is \(type) and cannot be set to a \(valueType) expression")
                }
                assignments.append("\(column) = (\(sql))::\(type.sqlType)")
                returned.append(.init(name: key, decoding: .attribute(type)))
            case .relationship(let relationship):
                guard !relationship.isToMany, case .foreignKey = entity.storage(of: index) else {
                    throw PostgresDataError.invalidRequest("batch update of \(entity.name).\(key): only to-one relationships stored in \(entity.name)'s table can be set; change the other side")
                }
                let destination = entity.destination(of: index)
                switch value {
                case .constant(.null):
                    guard relationship.isOptional else {
                        throw PostgresDataError.invalidRequest("batch update of \(entity.name).\(key): the relationship is required (not optional) and cannot be set to nil; nothing was sent")
                    }
                    assignments.append("\(column) = NULL")
                case .constant(.object(let id)):
                    guard id.entity === destination, let target = id.primaryKey else {
                        throw PostgresDataError.invalidRequest("batch update of \(entity.name).\(key): \(id) is not a saved \(destination.name)")
                    }
                    try values.bindings.append(target)
                    assignments.append("\(column) = $\(values.bindings.count)::bigint")
                default:
                    throw PostgresDataError.invalidRequest("batch update of \(entity.name).\(key): set a to-one relationship to an object ID or nil")
                }
                returned.append(.init(name: key, decoding: .foreignKey(destination)))
            }
        }
        guard values.joins.isEmpty else {
            throw PostgresDataError.invalidRequest("batch update of \(entity.name): new values can use the row's own attributes, not key paths through relationships")
        }
        var condition = PredicateSQL(entity: entity, bindings: values.bindings)
        let predicateSQL = try predicate.map { try condition.condition($0.node) }
        let table = quoteIdentifier(entity.tableName)
        var sql = "UPDATE \(table) AS t SET \(assignments.joined(separator: ", "))"
        if let predicateSQL {
            if condition.joins.isEmpty {
                sql += " WHERE \(predicateSQL)"
            } else {
                // UPDATE cannot LEFT JOIN: the rows are chosen by a subquery with the joins.
                sql += " WHERE t.\"id\" IN (SELECT t.\"id\" FROM \(table) AS t \(condition.joins.joined(separator: " ")) WHERE \(predicateSQL))"
            }
        }
        let returning: BatchUpdatePlan.Returning
        var list = "t.\"id\""
        switch resultType {
        case .updatedObjects:
            let columns = returned.map { "t.\(quoteIdentifier(entity.columnName(of: entity.propertyIndex(named: $0.name)!)))" }
            list += ", " + columns.joined(separator: ", ")
            returning = .values(returned)
        case .updatedObjectIDs:
            returning = .ids
        case .statusOnly, .updatedObjectsCount:
            returning = returningIDs ? .ids : .count
        }
        if let history {
            // The same statement records the updated rows in history.
            let select = if case .count = returning { "SELECT count(*) FROM u" } else { "SELECT * FROM u" }
            sql = try HistoryRecord.wrapping(sql + " RETURNING " + list, bindings: &condition.bindings, origin: history, entity: entity,
                                             changeType: .update, updatedProperties: propertiesToUpdate.keys.sorted(), select: select)
        } else if case .count = returning {
            sql = "WITH u AS (\(sql) RETURNING 1) SELECT count(*) FROM u"
        } else {
            sql += " RETURNING " + list
        }
        return BatchUpdatePlan(sql: sql, bindings: condition.bindings, returning: returning)
    }

    private static func describe(_ value: AttributeValue) -> String {
        switch value {
        case .string(let string): "\"\(string)\""
        default: "\(value.anyValue.map { "\($0)" } ?? "nil")"
        }
    }
}

/// The statement of a batch update and how to read what it returns.
struct BatchUpdatePlan: Sendable {
    struct Column: Sendable {
        var name: String
        var decoding: ColumnDecoding
    }

    enum Returning: Sendable {
        case count
        case ids
        case values([Column])
    }

    var sql: String
    var bindings: PostgresBindings
    var returning: Returning
}
