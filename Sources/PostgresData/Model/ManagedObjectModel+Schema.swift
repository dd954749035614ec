import Foundation
import PostgresClient

/// A named constraint of the generated schema and the model rule it enforces, so that a
/// constraint violation reported by the server can name the entity, key and rule.
public struct SchemaConstraint: Sendable, Hashable {
    /// The constraint name as PostgreSQL reports it (`item_weight_min`).
    public var name: String
    /// The table the constraint belongs to.
    public var tableName: String
    /// The entity (or, for a join table, the entity of the relationship owning it).
    public var entityName: String
    /// The property names involved.
    public var keys: [String]
    /// The rule in words (`weight >= 0`, `unique`, `list must exist`).
    public var rule: String
}

extension ManagedObjectModel {
    /// The DDL that creates every table, constraint and index of the model, as one script.
    ///
    /// Tables are named after entities in snake_case with a `bigint` identity primary key;
    /// non-optional attributes are `NOT NULL`; minimum, maximum, length and pattern rules are
    /// named `CHECK` constraints; to-one relationships are foreign keys `DEFERRABLE INITIALLY
    /// DEFERRED` with `ON DELETE` from the inverse's delete rule; many-to-many relationships
    /// are join tables. The migration tool builds on it.
    public func createSchemaSQL() -> String {
        schemaStatements().map { $0 + ";" }.joined(separator: "\n\n") + "\n"
    }

    /// The statements of ``createSchemaSQL()``, one per element: tables first, then foreign
    /// keys, indexes, and the functions and triggers that keep derived aggregates current.
    public func schemaStatements() -> [String] {
        let plan = SchemaPlan(model: self)
        return plan.tables + plan.foreignKeys + plan.indexes + plan.triggers
    }

    /// Every named constraint of the generated schema.
    public var schemaConstraints: [String: SchemaConstraint] { SchemaPlan(model: self).constraints }

    /// The schema the model expects, as data: what `postgres-data diff` compares a live
    /// database with.
    public var schemaDescription: SchemaDescription {
        let plan = SchemaPlan(model: self)
        return SchemaDescription(tables: plan.tableOrder.map { plan.described[$0]! })
    }

    /// ``schemaDescription`` as pretty-printed JSON, for `postgres-data diff --model FILE`.
    public func schemaJSON() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(schemaDescription)
    }
}
