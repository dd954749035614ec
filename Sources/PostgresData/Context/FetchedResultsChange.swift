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
