import PostgresClient

/// The rows of a batch insert's managed-object handler, made when the request executes: one
/// reusable object of `Entity` (in no context), reset to the model's defaults before each
/// call, checked and encoded into `COPY` as the handler returns it.
struct ManagedObjectHandlerRows<Entity: ManagedObject>: BatchInsertRowSource {
    typealias Handler = (Entity) -> Bool

    private let slot: HandlerSlot<Handler>

    init(_ handler: sending @escaping Handler) {
        slot = HandlerSlot(handler)
    }

    func write(_ entity: EntityDescription, to writer: inout CopyWriter) throws {
        let object = Entity(entity: entity, insertInto: nil)
        object.isInsertedStorage = true
        let defaults = entity.defaultValues
        let columns = BatchInsertColumns(entity)
        object.values = PropertyValues(defaults)
        try slot.withHandler(entity) { handler in
            var row = 0
            while true {
                // Reset in place: the object's storage stays unique, so no allocation per row.
                object.values.withUnsafeMutableBufferPointer { values in
                    for index in values.indices { values[index] = defaults[index] }
                }
                if handler(object) { break }
                try writer.appendRow(fieldCount: columns.indices.count) { buffer in
                    for (position, index) in columns.indices.enumerated() {
                        let value = object.values[index]
                        // (Relationships cannot be set through this object.)
                        if !columns.admits(value, at: position), let attribute = entity.properties[index].attribute {
                            let broken = attribute.violations(of: value)
                            guard broken.isEmpty else {
                                throw PostgresDataError.invalidRequest("batch insert of \(entity.name), row \(row): \(attribute.name) \(broken.joined(separator: "; ")); nothing was written")
                            }
                        }
                        try ValueCoding.writeField(value, as: columns.types[position], into: &buffer)
                    }
                }
                row += 1
            }
        }
    }
}
