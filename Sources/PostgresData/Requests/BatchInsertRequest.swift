import Foundation
import PostgresClient

/// Inserts many rows of one entity without a context: binary `COPY` when nothing has to
/// come back, `INSERT … SELECT FROM unnest(…)` when IDs are wanted or conflicts handled.
///
/// Core Data equivalent: `NSBatchInsertRequest`. Every value is checked against the model
/// (type, optionality, ranges, lengths, patterns) before anything is sent; an error names
/// the row, the key and the rule. Keys a row leaves out get the model's default values.
///
/// ```swift
/// var insert = try BatchInsertRequest(entityName: "Item", objects: [["name": "milk", "weight": 2], ["name": "bread"]])
/// insert.resultType = .objectIDs
/// let ids = try await context.execute(insert).objectIDs
/// ```
public struct BatchInsertRequest: Sendable {
    /// The entity whose rows are inserted.
    public var entityName: String
    /// What the result carries (default: status only).
    public var resultType: BatchInsertRequestResultType = .statusOnly
    /// What happens on a uniqueness conflict (default: an error).
    public var onConflict: BatchInsertConflictPolicy = .error
    /// Contexts told of the inserted rows after the insert committed.
    public var contextsToMerge: [ManagedObjectContext] = []
    /// The rows, with values in their natural types (converted to the model's at execution).
    var rows: [[String: AttributeValue]] = []
    /// Rows of a managed-object handler, made and encoded at execution.
    var objectRows: (any BatchInsertRowSource)?
    /// Rows of a dictionary handler, produced and converted to the entity's types at execution.
    var dictionaryRows: DictionaryHandlerRows?

    /// Rows given as dictionaries of key to value (`Int`, `String`, `Date`, `ManagedObjectID`
    /// for a to-one relationship, nil, …).
    public init(entityName: String, objects: [[String: (any Sendable)?]]) throws {
        self.entityName = entityName
        self.rows = try objects.enumerated().map { position, object in
            try object.mapValues { value in
                guard case .constant(let converted)? = PredicateParser.value(value) else {
                    throw PostgresDataError.invalidRequest("batch insert row \(position): a value of type \(type(of: value as Any)) cannot be stored")
                }
                return converted
            }
        }
    }

    /// Rows from `Encodable` values: their coding keys are the entity's keys (dates encoded
    /// as seconds since 1970, data as Base64, as `JSONEncoder` does with those strategies).
    public init<Value: Encodable>(entityName: String, values: [Value]) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.dataEncodingStrategy = .base64
        let objects = try values.map { value -> [String: (any Sendable)?] in
            guard let dictionary = try JSONSerialization.jsonObject(with: encoder.encode(value)) as? [String: Any] else {
                throw PostgresDataError.invalidRequest("batch insert: \(Value.self) does not encode as a keyed object")
            }
            return dictionary.mapValues { $0 is NSNull ? nil : Self.jsonValue($0) }
        }
        try self.init(entityName: entityName, objects: objects)
    }

    /// Rows produced by `handler`, called with an empty dictionary until it returns true
    /// (Core Data's `dictionaryHandler`).
    ///
    /// As in Core Data, the handler runs when the request executes, not here: without
    /// conflicts to handle or IDs to return, each row it fills goes straight into `COPY`, so
    /// the rows are never all in memory and the server stores rows while the handler makes
    /// more. One dictionary is reused for every row. A row that breaks the model aborts the
    /// insert with an error naming the row and the key, and no row is written. The handler
    /// runs on the store's connection, once per execution, while the executing context
    /// waits: it must not use a context. A copy of the request executing at the same time
    /// fails instead of calling it concurrently.
    public init(entityName: String, dictionaryHandler handler: sending @escaping (inout [String: (any Sendable)?]) -> Bool) throws {
        self.entityName = entityName
        self.dictionaryRows = DictionaryHandlerRows(handler)
    }

    /// Rows filled by `handler` on one reusable object of `Entity` (not in any context), reset
    /// to the model's defaults before each call, until it returns true (Core Data's
    /// `managedObjectHandler`). The fastest way in: no dictionary per row. Set attributes
    /// only; to-one relationships take IDs through ``init(entityName:objects:)``.
    ///
    /// As in Core Data, the handler runs when the request executes, not here, and each row
    /// goes into `COPY` as the handler returns it (into a temporary table first when IDs come
    /// back or conflicts are handled). A row that breaks the model aborts the insert with an
    /// error naming the row and the attribute, and no row is written. The handler runs on
    /// the store's connection, once per execution, while the executing context waits: it
    /// must not use a context. A copy of the request executing at the same time fails
    /// instead of calling it concurrently.
    public init<Entity: ManagedObject>(entity: Entity.Type, managedObjectHandler handler: sending @escaping (Entity) -> Bool) throws {
        let description = Entity.entity()
        guard description.isResolved else {
            throw PostgresDataError.invalidRequest("batch insert of \(description.name): load a container whose model has the entity first")
        }
        self.entityName = description.name
        self.objectRows = ManagedObjectHandlerRows<Entity>(handler)
    }

    private static func jsonValue(_ value: Any) -> (any Sendable)? {
        switch value {
        case let number as NSNumber:
            switch String(cString: number.objCType) {
            case "c", "B": return number.boolValue
            case "d", "f": return number.doubleValue
            default: return number.int64Value
            }
        case let string as String: return string
        default: return "\(value)"
        }
    }

    /// True when the result must list the new rows' IDs.
    var wantsIDs: Bool { resultType == .objectIDs || !contextsToMerge.isEmpty }

    /// The rows checked and converted to the entity's types, in one column order.
    func plan(for entity: EntityDescription, returningIDs: Bool = false) throws -> BatchInsertPlan {
        if let objectRows {
            return try BatchInsertPlan(entity: entity, streaming: objectRows, request: self, returningIDs: returningIDs)
        }
        if let dictionaryRows {
            if !(returningIDs || wantsIDs), onConflict == .error, !entity.isInHierarchy {
                return try BatchInsertPlan(entity: entity, streaming: dictionaryRows, request: self, returningIDs: false)
            }
            let collected = try dictionaryRows.collect(for: entity)
            let properties = try collected.keys.enumerated().map { position, key in try Self.propertyIndex(of: key, in: entity, row: position) }
            var converted: [[Int: AttributeValue]] = []
            converted.reserveCapacity(collected.rowEnds.count)
            var start = 0
            for (position, end) in collected.rowEnds.enumerated() {
                var values: [Int: AttributeValue] = [:]
                for slot in start..<end {
                    let index = properties[Int(collected.keyNumbers[slot])]
                    values[index] = try Self.convert(collected.values[slot], for: entity, at: index, row: position)
                }
                try Self.checkRequired(values, of: entity, row: position)
                converted.append(values)
                start = end
            }
            return try BatchInsertPlan(entity: entity, rows: converted, request: self, returningIDs: returningIDs)
        }
        var converted: [[Int: AttributeValue]] = []
        converted.reserveCapacity(rows.count)
        for (position, row) in rows.enumerated() {
            var values: [Int: AttributeValue] = [:]
            for (key, value) in row {
                let index = try Self.propertyIndex(of: key, in: entity, row: position)
                values[index] = try Self.convert(value, for: entity, at: index, row: position)
            }
            try Self.checkRequired(values, of: entity, row: position)
            converted.append(values)
        }
        return try BatchInsertPlan(entity: entity, rows: converted, request: self, returningIDs: returningIDs)
    }

    /// The property `key` names, which a batch insert may set.
    static func propertyIndex(of key: String, in entity: EntityDescription, row: Int) throws -> Int {
        guard let index = entity.propertyIndex(named: key) else { throw PredicateSQL.unknownKey(key, in: entity, path: key) }
        guard entity.derivations[index] == nil else {
            throw PostgresDataError.invalidRequest("batch insert of \(entity.name), row \(row): \(key) is derived (\(entity.properties[index].attribute?.derivationExpression ?? "")); the database computes it, leave it out; nothing was written")
        }
        return index
    }

    /// Fails when a row leaves out a required attribute without a default.
    private static func checkRequired(_ values: [Int: AttributeValue], of entity: EntityDescription, row: Int) throws {
        for index in entity.writableColumnIndices where values[index] == nil {
            if let attribute = entity.properties[index].attribute, !attribute.isOptional, entity.defaultValues[index].isNull {
                throw PostgresDataError.invalidRequest("batch insert of \(entity.name), row \(row): \(attribute.name) is required and has no default; nothing was written")
            }
        }
    }

    static func convert(_ value: AttributeValue, for entity: EntityDescription, at index: Int, row: Int) throws -> AttributeValue {
        let key = entity.properties[index].name
        switch entity.properties[index] {
        case .attribute(let attribute):
            var result = value
            if !value.isNull {
                switch (value, attribute.attributeType) {
                case (.double(let seconds), .date): result = .date(Date(timeIntervalSince1970: seconds))
                case (.integer(let seconds), .date): result = .date(Date(timeIntervalSince1970: Double(seconds)))
                case (.string(let text), .binaryData):
                    guard let data = Data(base64Encoded: text) else { fallthrough }
                    result = .data(data)
                case (.string(let text), .uuid):
                    guard let uuid = UUID(uuidString: text) else { fallthrough }
                    result = .uuid(uuid)
                default:
                    guard let converted = try? PredicateSQL.convert(value, to: attribute.attributeType, key: key) else {
                        throw PostgresDataError.invalidRequest("batch insert of \(entity.name), row \(row): \(key) is \(attribute.attributeType) and cannot take a \(value.typeName) value; nothing was written")
                    }
                    result = converted
                }
            }
            let broken = attribute.violations(of: result)
            guard broken.isEmpty else {
                throw PostgresDataError.invalidRequest("batch insert of \(entity.name), row \(row): \(key) \(broken.joined(separator: "; ")); nothing was written")
            }
            return result
        case .relationship(let relationship):
            guard !relationship.isToMany, case .foreignKey = entity.storage(of: index) else {
                throw PostgresDataError.invalidRequest("batch insert of \(entity.name): \(key) is stored in another table; set it from the other side")
            }
            switch value {
            case .null where relationship.isOptional: return .null
            case .object(let id) where id.entity === entity.destination(of: index) && id.primaryKey != nil: return value
            default:
                throw PostgresDataError.invalidRequest("batch insert of \(entity.name), row \(row): \(key) takes the ID of a saved \(entity.destination(of: index).name)\(relationship.isOptional ? " or nil" : "")")
            }
        }
    }
}
