import Foundation

/// One object's move through a fetched-results controller's results.
///
/// Core Data equivalent: the arguments of `controller(_:didChange:at:for:newIndexPath:)`.
/// Index paths are `[section, item]`; `indexPath` is where the object was before the
/// change, `newIndexPath` where it is after.
public struct FetchedResultsChange: Sendable, Hashable {
    /// What happened to the object.
    ///
    /// Core Data equivalent: `NSFetchedResultsChangeType`.
    public enum ChangeType: Sendable, Hashable {
        /// The object entered the results (`newIndexPath`).
        case insert
        /// The object left the results (`indexPath`).
        case delete
        /// The object changed place (`indexPath` → `newIndexPath`); it may have changed too.
        case move
        /// The object changed and kept its place relative to the others.
        case update
    }

    /// What happened.
    public var type: ChangeType
    /// The object.
    public var objectID: ManagedObjectID
    /// Where it was (nil for an insert).
    public var indexPath: IndexPath?
    /// Where it is now (nil for a delete).
    public var newIndexPath: IndexPath?
}

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

#if !canImport(UIKit) && !canImport(AppKit)
extension IndexPath {
    /// An index path of an item in a section, as UIKit and AppKit spell it.
    public init(item: Int, section: Int) {
        self.init(indexes: [section, item])
    }

    /// The section: the first index.
    public var section: Int { self[0] }

    /// The item in the section: the second index.
    public var item: Int { self[1] }
}
#endif
