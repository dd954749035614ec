/// Faults made for the rows of a fetch's batch by the task that decoded it, while the
/// context registering the batches was behind
/// (``SnapshotRemainder/decode(batchSize:into:makingObjectsOf:lead:)``).
///
/// Allocating the objects is about half of what registering a million fetched rows costs
/// on the context's queue, and the decoding task, on the other core, is done long before the
/// context is: the objects it makes are work the context no longer does. Each is a bare
/// fault of the batch's entity with its row's ID, registered nowhere; the context takes those
/// whose IDs it has no object for, and the others go with the batch. The entity's class's
/// `init(entity:insertInto:)` runs on the task for them, with no context.
///
/// Measured on 2026-11-29 against 71086d7 (two cores, eight alternating processes each): a
/// fetch of a million objects went from a median 1.45× raw libpq's time to 1.32×; one of
/// faults, whose registration does less, stayed at 1.46×.
///
/// Made by one task, then handed with its batch through the channel (whose lock orders the
/// two) to the context, the only one to use it after that.
final class ObjectsMadeAhead: @unchecked Sendable {
    private let objects: UnsafeMutablePointer<Unmanaged<ManagedObject>?>
    private let count: Int

    /// A fault of `entity` for each of `keys`.
    init(entity: EntityDescription, keys: [Int64]) {
        count = keys.count
        objects = .allocate(capacity: max(1, count))
        for (index, key) in keys.enumerated() {
            let object = ManagedObject.makeFault(ManagedObjectID(entity: entity, primaryKey: key))
            (objects + index).initialize(to: Unmanaged.passRetained(object))
        }
    }

    deinit {
        for index in 0..<count { objects[index]?.release() }
        objects.deallocate()
    }

    /// The fault made for row `index`, handed over: a second call for the row returns nil.
    @inline(__always)
    func take(_ index: Int) -> ManagedObject? {
        guard let object = objects[index] else { return nil }
        objects[index] = nil
        return object.takeRetainedValue()
    }
}
