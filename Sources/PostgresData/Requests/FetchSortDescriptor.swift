/// How fetched objects are ordered: a key path (through to-one relationships), the
/// direction, and optionally case-insensitively. NULL sorts first ascending, as in Core Data.
///
/// Core Data equivalent: `NSSortDescriptor(key:ascending:)`. Foundation's `SortDescriptor`
/// converts to it (``init(_:)``).
public struct FetchSortDescriptor: Sendable, Hashable {
    /// The key path sorted by (`name`, `list.title`).
    public var key: String
    /// Smallest first when true.
    public var ascending: Bool
    /// Compare strings without regard to case (`lower(…)`).
    public var caseInsensitive: Bool

    /// A sort by `key`.
    public init(key: String, ascending: Bool = true, caseInsensitive: Bool = false) {
        self.key = key
        self.ascending = ascending
        self.caseInsensitive = caseInsensitive
    }
}
