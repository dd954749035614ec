import Foundation
import PostgresClient

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

extension BatchUpdateRequest {
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
                if let derivation = attribute.derivationExpression {
                    throw PostgresDataError.invalidRequest("batch update of \(entity.name): \(key) is derived (\(derivation)); the database computes it, so it cannot be set; nothing was sent")
                }
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
        let predicateSQL = try [predicate.map { try condition.condition($0.node) }, entity.discriminatorCondition(alias: "t")].conjunction
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
}
