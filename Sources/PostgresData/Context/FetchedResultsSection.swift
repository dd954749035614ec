import Foundation

/// A section of a fetched-results controller's results: the objects sharing one value of the
/// section key path.
///
/// Core Data equivalent: `NSFetchedResultsSectionInfo`.
public struct FetchedResultsSection<Result: ManagedObject> {
    /// The value of the section key path, as text ("" for nil).
    public var name: String
    /// The section's objects, in the request's order.
    public var objects: [Result]
    /// How many objects the section holds.
    public var numberOfObjects: Int { objects.count }
}
