/// Where an asynchronous or batched fetch stands, after a batch or at its end.
public struct FetchProgressUpdate: Sendable, Hashable {
    /// Rows delivered so far.
    public var rowCount: Int
    /// Batches delivered so far.
    public var batchCount: Int
    /// The expected total, when it was estimated or counted (see ``ResultCountEstimate``).
    public var estimatedResultCount: Int?
    /// Time since the fetch started.
    public var elapsed: Duration
    /// True for the last update: the fetch ended (see the result for how).
    public var isFinished: Bool
}
