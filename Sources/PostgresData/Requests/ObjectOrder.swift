/// The order of sort descriptors applied to objects in memory, as the SQL `ORDER BY` of a
/// fetch orders rows: NULL first ascending (last descending), `lower()` for
/// case-insensitive strings, code-point order for strings, then primary key (objects not
/// yet saved after the saved ones, in insertion order).
import Foundation

struct ObjectOrder {
    let descriptors: [FetchSortDescriptor]
    private let evaluator = PredicateEvaluator()

    init(descriptors: [FetchSortDescriptor]) {
        self.descriptors = descriptors
    }

    /// True when `a` comes strictly before `b`.
    func precedes(_ a: ManagedObject, _ b: ManagedObject) throws -> Bool {
        for descriptor in descriptors {
            var x = try evaluator.value(at: descriptor.key, of: a)
            var y = try evaluator.value(at: descriptor.key, of: b)
            if descriptor.caseInsensitive, case .string(let first) = x, case .string(let second) = y {
                x = .string(first.lowercased())
                y = .string(second.lowercased())
            }
            let result: ComparisonResult = switch (x.isNull, y.isNull) {
            case (true, true): .orderedSame
            case (true, false): .orderedAscending
            case (false, true): .orderedDescending
            case (false, false): PredicateEvaluator.order(x, y) ?? .orderedSame
            }
            if result != .orderedSame {
                return descriptor.ascending ? result == .orderedAscending : result == .orderedDescending
            }
        }
        switch (a.objectID.primaryKey, b.objectID.primaryKey) {
        case (let p?, let q?): return p < q
        case (.some, nil): return true
        default: return false
        }
    }
}
