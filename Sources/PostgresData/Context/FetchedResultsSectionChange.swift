import Foundation

/// A section that appeared or disappeared.
///
/// Core Data equivalent: the arguments of `controller(_:didChange:atSectionIndex:for:)`.
public struct FetchedResultsSectionChange: Sendable, Hashable {
    /// `.insert` or `.delete`.
    public var type: FetchedResultsChange.ChangeType
    /// The section's index: before the change for a delete, after it for an insert.
    public var sectionIndex: Int
    /// The section's name.
    public var name: String
}
