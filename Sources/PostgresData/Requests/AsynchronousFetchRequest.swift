/// A fetch that runs in the background through a server-side cursor, reporting progress
/// after every batch, cancellable on the server.
///
/// Core Data equivalent: `NSAsynchronousFetchRequest`. Execute it with the context's
/// `execute(_:)`, on the context's queue; the call returns at once with an ``AsynchronousFetchResult``, the rows arrive
/// `fetchBatchSize` at a time (registered in the context between other work), and
/// `completionBlock` runs on the context's queue when the fetch ends.
///
/// ```swift
/// var request = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor("createdAt")])
/// request.fetchBatchSize = 10_000
/// let asynchronous = AsynchronousFetchRequest(fetchRequest: request) { result in
///     print("fetched \(result.finalResult?.count ?? 0)")      // on the context's queue
/// }
/// let result = try context.execute(asynchronous)               // inside perform { }
/// ```
///
/// The fetch reads one consistent snapshot (a read-only, repeatable-read transaction on a
/// pooled connection of its own). ``AsynchronousFetchResult/cancel()``, cancelling its
/// ``AsynchronousFetchResult/progress``, or cancelling the task awaiting
/// ``AsynchronousFetchResult/wait()`` sends `PQcancel` to the server at once.
public struct AsynchronousFetchRequest<Result>: Sendable {
    /// The fetch to run. Its `fetchBatchSize` is the number of rows per `FETCH FORWARD`
    /// (``defaultBatchSize`` when 0). Results are objects or object IDs.
    public var fetchRequest: FetchRequest<Result>
    /// Runs on the context's queue when the fetch ends, successfully or not.
    public var completionBlock: (@Sendable (AsynchronousFetchResult<Result>) -> Void)?
    /// Whether, and how, the total is learnt before the first batch (default: not at all,
    /// so progress is indeterminate, as in Core Data).
    public var resultCountEstimate: ResultCountEstimate = .none
    /// Runs on the context's queue after each batch is registered: Linux has no key-value
    /// observing of `Progress`, so this (or ``AsynchronousFetchResult/progressUpdates()``)
    /// is how to follow a fetch there.
    public var progressHandler: (@Sendable (FetchProgressUpdate) -> Void)?

    /// Rows per `FETCH` when the fetch request's `fetchBatchSize` is 0.
    public static var defaultBatchSize: Int { 10_000 }

    /// An asynchronous fetch of `fetchRequest`.
    ///
    /// Core Data equivalent: `init(fetchRequest:completionBlock:)`.
    public init(fetchRequest: FetchRequest<Result>, completionBlock: (@Sendable (AsynchronousFetchResult<Result>) -> Void)? = nil) {
        self.fetchRequest = fetchRequest
        self.completionBlock = completionBlock
    }

    var batchSize: Int { fetchRequest.fetchBatchSize > 0 ? fetchRequest.fetchBatchSize : Self.defaultBatchSize }
}
