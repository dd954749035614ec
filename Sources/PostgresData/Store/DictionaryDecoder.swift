import PostgresClient

/// Decodes the rows of a dictionary fetch (``FetchRequestResultType/dictionary``), NULL values
/// left out as in Core Data: all into one ``FetchedDictionary/Rows``, or one
/// `[String: AttributeValue]` per row.
///
/// Every row's Swift dictionary has the same keys, so each is a copy of one template holding
/// them all, its values written through the template's indices: no key is hashed per row.
/// Keys of NULL values are then removed, by key. Each column decodes with its ``ColumnDecoder``.
struct DictionaryDecoder: Sendable {
    /// A fetched column: the dictionary key, the attribute type its values have, and for a
    /// to-one relationship the entity its keys belong to.
    struct Column: Sendable {
        var name: String
        var type: AttributeType
        var destination: EntityDescription?
    }

    private let names: [String]
    private let columns: [ColumnDecoder]
    private let template: [String: AttributeValue]
    private let slots: [Dictionary<String, AttributeValue>.Index]

    init(columns: [Column], result: QueryResult) {
        names = columns.map(\.name)
        self.columns = columns.enumerated().map { position, column in
            ColumnDecoder(column: position, of: result, as: column.type, destination: column.destination)
        }
        var template: [String: AttributeValue] = [:]
        template.reserveCapacity(columns.count)
        for column in columns { template[column.name] = .null }
        self.template = template
        slots = columns.map { template.index(forKey: $0.name)! }
    }

    /// Every row of `result`, its values one after the other in one array.
    func rows(of result: QueryResult) throws -> FetchedDictionary.Rows {
        var values: [AttributeValue] = []
        values.reserveCapacity(result.count * columns.count)
        for row in result {
            for column in columns { values.append(try column.value(row)) }
        }
        return FetchedDictionary.Rows(keys: names, values: values)
    }

    func decode(_ row: Row) throws -> [String: AttributeValue] {
        var dictionary = template
        var hasNulls = false
        for position in columns.indices {
            let value = try columns[position].value(row)
            hasNulls = hasNulls || value.isNull
            dictionary.values[slots[position]] = value
        }
        if hasNulls {
            // Keys found through the template's indices first: removals move entries.
            let nulls = columns.indices.filter { dictionary.values[slots[$0]].isNull }
            for position in nulls { dictionary.removeValue(forKey: names[position]) }
        }
        return dictionary
    }
}
