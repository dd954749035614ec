/// How an asynchronous fetch learns its total before the first batch.
///
/// Core Data's asynchronous fetches report indeterminate progress; PostgreSQL can say more.
public enum ResultCountEstimate: Sendable, Hashable {
    /// No total: progress is indeterminate until the fetch ends (the default, as in Core Data).
    case none
    /// The planner's estimate (`EXPLAIN`): free, and as good as the table's statistics.
    case plannerEstimate
    /// `SELECT count(*)` of the same query in the same snapshot: exact, at the price of
    /// running the query's scan once more.
    case exact
}
