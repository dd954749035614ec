import Foundation

/// Everything one change of the context did to a fetched-results controller's results, and
/// the results after it, as `Sendable` values to hand to other tasks (a WebSocket writer).
///
/// Core Data equivalent: the calls between `controllerWillChangeContent` and
/// `controllerDidChangeContent`, or a diffable snapshot.
public struct FetchedResultsDifference: Sendable, Hashable {
    /// Sections removed (old indexes) and added (new indexes).
    public var sectionChanges: [FetchedResultsSectionChange]
    /// Objects removed, added, moved and updated.
    public var objectChanges: [FetchedResultsChange]
    /// The section names after the change.
    public var sectionNames: [String]
    /// The objects of each section after the change.
    public var objectIDs: [[ManagedObjectID]]

    /// The changes of one type.
    public func changes(of type: FetchedResultsChange.ChangeType) -> [FetchedResultsChange] {
        objectChanges.filter { $0.type == type }
    }
}
