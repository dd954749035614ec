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
    /// Rows filled by a managed-object handler, checked and encoded as binary COPY rows of
    /// every column as the handler returned them.
    var encodedRows: EncodedRows?

    /// Binary COPY rows of every column of an entity (`entity.columnIndices` order).
    struct EncodedRows: Sendable {
        var bytes: [UInt8]
        var count: Int
    }

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
    public init(entityName: String, dictionaryHandler handler: (inout [String: (any Sendable)?]) -> Bool) throws {
        var objects: [[String: (any Sendable)?]] = []
        while true {
            var object: [String: (any Sendable)?] = [:]
            if handler(&object) { break }
            objects.append(object)
        }
        try self.init(entityName: entityName, objects: objects)
    }

    /// Rows filled by `handler` on one reusable object of `Entity` (not in any context), reset
    /// to the model's defaults before each call, until it returns true (Core Data's
    /// `managedObjectHandler`). The fastest way in: no dictionary per row. Set attributes
    /// only; to-one relationships take IDs through ``init(entityName:objects:)``.
    public init<Entity: ManagedObject>(entity: Entity.Type, managedObjectHandler handler: (Entity) -> Bool) throws {
        let description = Entity.entity()
        guard description.isResolved else {
            throw PostgresDataError.invalidRequest("batch insert of \(description.name): load a container whose model has the entity first")
        }
        self.entityName = description.name
        let object = Entity(entity: description, insertInto: nil)
        object.isInsertedStorage = true
        let defaults = description.defaultValues
        let columns = description.writableColumnIndices
        let types = columns.map { SavePlan.columnType(description, $0) }
        // Per column: its attribute's optionality and type, and whether it has rules beyond
        // them; relationships (nil) cannot be set through this object.
        let checks = columns.map { index in
            description.properties[index].attribute.map { (isOptional: $0.isOptional, type: $0.attributeType, hasRules: $0.hasValueRules) }
        }
        var buffer = PostgresBuffer(capacity: 1 << 16)
        var count = 0
        object.values = PropertyValues(defaults)
        while true {
            // Reset in place: the object's storage stays unique, so no allocation per row.
            object.values.withUnsafeMutableBufferPointer { values in
                for index in values.indices { values[index] = defaults[index] }
            }
            if handler(object) { break }
            buffer.writeInteger(Int16(columns.count))
            for (position, index) in columns.enumerated() {
                let value = object.values[index]
                if let check = checks[position],
                   check.hasRules || (value.isNull ? !check.isOptional : !value.fits(check.type)),
                   let attribute = description.properties[index].attribute {
                    let broken = attribute.violations(of: value)
                    guard broken.isEmpty else {
                        throw PostgresDataError.invalidRequest("batch insert of \(description.name), row \(count): \(attribute.name) \(broken.joined(separator: "; ")); nothing was sent")
                    }
                }
                try ValueCoding.writeField(value, as: types[position], into: &buffer)
            }
            count += 1
        }
        encodedRows = EncodedRows(bytes: buffer.bytes, count: count)
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
        if let encodedRows {
            return try BatchInsertPlan(entity: entity, encodedRows: encodedRows, request: self, returningIDs: returningIDs)
        }
        var converted: [[Int: AttributeValue]] = []
        converted.reserveCapacity(rows.count)
        for (position, row) in rows.enumerated() {
            var values: [Int: AttributeValue] = [:]
            for (key, value) in row {
                guard let index = entity.propertyIndex(named: key) else { throw PredicateSQL.unknownKey(key, in: entity, path: key) }
                guard entity.derivations[index] == nil else {
                    throw PostgresDataError.invalidRequest("batch insert of \(entity.name), row \(position): \(key) is derived (\(entity.properties[index].attribute?.derivationExpression ?? "")); the database computes it, leave it out; nothing was sent")
                }
                values[index] = try Self.convert(value, for: entity, at: index, row: position)
            }
            for index in entity.writableColumnIndices where values[index] == nil {
                if let attribute = entity.properties[index].attribute, !attribute.isOptional, entity.defaultValues[index].isNull {
                    throw PostgresDataError.invalidRequest("batch insert of \(entity.name), row \(position): \(attribute.name) is required and has no default; nothing was sent")
                }
            }
            converted.append(values)
        }
        return try BatchInsertPlan(entity: entity, rows: converted, request: self, returningIDs: returningIDs)
    }

    private static func convert(_ value: AttributeValue, for entity: EntityDescription, at index: Int, row: Int) throws -> AttributeValue {
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
                default: result = try PredicateSQL.convert(value, to: attribute.attributeType, key: key)
                }
            }
            let broken = attribute.violations(of: result)
            guard broken.isEmpty else {
                throw PostgresDataError.invalidRequest("batch insert of \(entity.name), row \(row): \(key) \(broken.joined(separator: "; ")); nothing was sent")
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
