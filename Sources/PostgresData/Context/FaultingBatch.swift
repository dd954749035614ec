/// A batch of a fetch with a ``FetchRequest/fetchBatchSize``: the IDs of the objects that are
/// filled together, in one query, when any of them is first used.
///
/// Core Data equivalent: the batches of the array a batched fetch returns. The context keeps
/// only the last ``filledLimit`` batches filled; unchanged objects of older batches become
/// faults again, so walking a million results holds a few batches of rows.
final class FaultingBatch {
    /// How many batches stay filled at once.
    static let filledLimit = 3

    let entity: EntityDescription
    let ids: [ManagedObjectID]
    /// The request's relationships to prefetch for the batch's objects.
    let prefetching: [String]

    init(entity: EntityDescription, ids: [ManagedObjectID], prefetching: [String]) {
        self.entity = entity
        self.ids = ids
        self.prefetching = prefetching
    }
}
