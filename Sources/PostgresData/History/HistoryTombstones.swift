import Foundation

/// The tombstones of deleted objects as history stores them: one JSON object per change
/// row, `{"<key>": {"<attribute>": value, …}, …}`, holding the attributes that keep their
/// values on deletion (``AttributeDescription/preservesValueInHistoryOnDeletion``). Values
/// are written by type: numbers, strings, booleans, dates as seconds since 1970, binary
/// data as Base64, decimals, UUIDs, URLs and JSON as strings.
enum HistoryTombstones {
    /// The property indices of `entity`'s attributes whose values deletions keep.
    static func preserved(in entity: EntityDescription) -> [Int] {
        entity.columnIndices.filter { entity.properties[$0].attribute?.preservesValueInHistoryOnDeletion == true }
    }

    /// The JSON of the deleted rows `rows` (key, values by property index); nil when the
    /// entity keeps no value on deletion.
    static func encode(_ rows: [(key: Int64, values: PropertyValues)], entity: EntityDescription) -> String? {
        let indices = preserved(in: entity)
        guard !indices.isEmpty, !rows.isEmpty else { return nil }
        var object: [String: Any] = [:]
        for row in rows {
            var values: [String: Any] = [:]
            for index in indices { values[entity.properties[index].name] = json(row.values[index]) }
            object[String(row.key)] = values
        }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The tombstones of a change row by key; values that do not read as their attribute's
    /// type (another version of the model wrote them) are left out.
    static func decode(_ text: String, entity: EntityDescription) -> [Int64: [String: AttributeValue]] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return [:] }
        var result: [Int64: [String: AttributeValue]] = [:]
        for (key, entry) in object {
            guard let key = Int64(key), let values = entry as? [String: Any] else { continue }
            var tombstone: [String: AttributeValue] = [:]
            for (name, value) in values {
                guard let index = entity.propertyIndex(named: name), let type = entity.properties[index].attribute?.attributeType,
                      let decoded = attributeValue(value, as: type) else { continue }
                tombstone[name] = decoded
            }
            result[key] = tombstone
        }
        return result
    }

    private static func json(_ value: AttributeValue) -> Any {
        switch value {
        case .null: NSNull()
        case .integer(let integer): integer
        case .double(let double): double
        case .float(let float): Double(float)
        case .decimal(let decimal): "\(decimal)"
        case .string(let string): string
        case .boolean(let boolean): boolean
        case .date(let date): date.timeIntervalSince1970
        case .data(let data): data.base64EncodedString()
        case .uuid(let uuid): uuid.uuidString
        case .url(let url): url.absoluteString
        case .json(let data): String(decoding: data, as: UTF8.self)
        case .object(let id): id.primaryKey.map { $0 as Any } ?? NSNull()
        }
    }

    private static func attributeValue(_ value: Any, as type: AttributeType) -> AttributeValue? {
        if value is NSNull { return .null }
        switch type {
        case .integer16, .integer32, .integer64: return (value as? NSNumber).map { .integer($0.int64Value) }
        case .double: return (value as? NSNumber).map { .double($0.doubleValue) }
        case .float: return (value as? NSNumber).map { .float($0.floatValue) }
        case .decimal: return (value as? String).flatMap { Decimal(string: $0) }.map(AttributeValue.decimal)
        case .string: return (value as? String).map(AttributeValue.string)
        case .boolean: return (value as? NSNumber).map { .boolean($0.boolValue) }
        case .date: return (value as? NSNumber).map { .date(Date(timeIntervalSince1970: $0.doubleValue)) }
        case .binaryData: return (value as? String).flatMap { Data(base64Encoded: $0) }.map(AttributeValue.data)
        case .uuid: return (value as? String).flatMap(UUID.init(uuidString:)).map(AttributeValue.uuid)
        case .uri: return (value as? String).flatMap(URL.init(string:)).map(AttributeValue.url)
        case .codable: return (value as? String).map { .json(Data($0.utf8)) }
        }
    }
}
