import Foundation
import PostgresClient

/// The rows of a batch insert's dictionary handler, produced when the request executes, as
/// Core Data calls `dictionaryHandler` during `execute(_:)`: without conflicts to handle or
/// IDs to return, each row goes from the handler's dictionary straight into `COPY`, so the
/// rows are never all held at once and the server stores rows while the handler makes more.
struct DictionaryHandlerRows: BatchInsertRowSource {
    typealias Handler = (inout [String: (any Sendable)?]) -> Bool

    private let slot: HandlerSlot<Handler>

    init(_ handler: sending @escaping Handler) {
        slot = HandlerSlot(handler)
    }

    /// Every value with the number of its key, row by row: for the paths that group rows or
    /// stage them (IDs returned, conflicts handled, a hierarchy's table).
    struct Collected: Sendable {
        var keys: [String] = []
        var keyNumbers: [Int32] = []
        var values: [AttributeValue] = []
        /// The end of each row in `values`.
        var rowEnds: [Int] = []
    }

    /// Calls the handler until it returns true and keeps every row.
    func collect(for entity: EntityDescription) throws -> Collected {
        try slot.withHandler(entity) { handler in try Self.collect(handler, for: entity) }
    }

    private static func collect(_ handler: Handler, for entity: EntityDescription) throws -> Collected {
        var collected = Collected()
        var numbers: [String: Int32] = [:]
        var object: [String: (any Sendable)?] = [:]
        // Rows with the same keys iterate them in the same order: the previous row's numbers
        // are reused after a string comparison, without hashing the key again.
        var previous: [(key: String, number: Int32)] = []
        while true {
            object.removeAll(keepingCapacity: true)
            if handler(&object) { break }
            for (position, (key, value)) in object.enumerated() {
                guard let converted = AttributeValue(batchValue: value) else {
                    throw unstorable(key, value, entity: entity, row: collected.rowEnds.count)
                }
                let number: Int32
                if position < previous.count, previous[position].key == key {
                    number = previous[position].number
                } else {
                    if let known = numbers[key] {
                        number = known
                    } else {
                        number = Int32(collected.keys.count)
                        numbers[key] = number
                        collected.keys.append(key)
                    }
                    if position < previous.count { previous[position] = (key, number) } else { previous.append((key, number)) }
                }
                collected.keyNumbers.append(number)
                collected.values.append(converted)
            }
            collected.rowEnds.append(collected.values.count)
        }
        return collected
    }

    /// Each value converted and checked, the model's defaults where a row leaves a key out.
    func write(_ entity: EntityDescription, to writer: inout CopyWriter) throws {
        let layout = Layout(entity)
        try slot.withHandler(entity) { handler in try layout.write(handler, to: &writer) }
    }

    /// What turns one dictionary into a COPY row of every writable column of an entity.
    private struct Layout {
        let entity: EntityDescription
        let columns: BatchInsertColumns
        /// The column slot of each property, -1 for a property without one.
        let slotOfProperty: [Int]
        let defaults: [AttributeValue]
        /// Required columns without a default, which every row must supply.
        let required: [Int]

        init(_ entity: EntityDescription) {
            self.entity = entity
            columns = BatchInsertColumns(entity)
            var slotOfProperty = [Int](repeating: -1, count: entity.properties.count)
            for (slot, index) in columns.indices.enumerated() { slotOfProperty[index] = slot }
            self.slotOfProperty = slotOfProperty
            let defaults = columns.indices.map { entity.defaultValues[$0] }
            self.defaults = defaults
            required = columns.indices.enumerated().compactMap { slot, index -> Int? in
                guard let attribute = entity.properties[index].attribute, !attribute.isOptional, defaults[slot].isNull else { return nil }
                return slot
            }
        }

        func write(_ handler: Handler, to writer: inout CopyWriter) throws {
            var object: [String: (any Sendable)?] = [:]
            // The property of each position of the previous row, reused when the key is the same.
            var previous: [(key: String, index: Int)] = []
            var values = defaults
            var supplied = [Bool](repeating: false, count: defaults.count)
            var row = 0
            while true {
                object.removeAll(keepingCapacity: true)
                if handler(&object) { break }
                for slot in values.indices {
                    values[slot] = defaults[slot]
                    supplied[slot] = false
                }
                for (position, (key, value)) in object.enumerated() {
                    let index: Int
                    if position < previous.count, previous[position].key == key {
                        index = previous[position].index
                    } else {
                        index = try BatchInsertRequest.propertyIndex(of: key, in: entity, row: row)
                        if position < previous.count { previous[position] = (key, index) } else { previous.append((key, index)) }
                    }
                    guard let converted = AttributeValue(batchValue: value) else { throw DictionaryHandlerRows.unstorable(key, value, entity: entity, row: row) }
                    let slot = slotOfProperty[index]
                    if slot >= 0, columns.admits(converted, at: slot) {
                        values[slot] = converted
                    } else {
                        // Checked and converted, or refused when the key is not a column of the table.
                        let checked = try BatchInsertRequest.convert(converted, for: entity, at: index, row: row)
                        guard slot >= 0 else { continue }
                        values[slot] = checked
                    }
                    supplied[slot] = true
                }
                for slot in required where !supplied[slot] {
                    throw PostgresDataError.invalidRequest("batch insert of \(entity.name), row \(row): \(entity.properties[columns.indices[slot]].name) is required and has no default; nothing was written")
                }
                try writer.appendRow(fieldCount: values.count) { buffer in try ValueCoding.writeCopyFields(values, types: columns.types, into: &buffer) }
                row += 1
            }
        }
    }

    fileprivate static func unstorable(_ key: String, _ value: (any Sendable)?, entity: EntityDescription, row: Int) -> PostgresDataError {
        .invalidRequest("batch insert of \(entity.name), row \(row): \(key) is a \(type(of: value as Any)), which cannot be stored; nothing was written")
    }
}
