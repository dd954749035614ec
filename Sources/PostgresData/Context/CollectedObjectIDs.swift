import Synchronization

/// Object IDs a context collected for a notification, made a `Set` the first time someone
/// asks for one: a save of 100,000 objects then builds no set that nobody reads, and the
/// contexts and observers that do read it share one.
struct CollectedObjectIDs: Sendable, Hashable {
    private final class List: Sendable {
        let ids: [ManagedObjectID]
        let built = Mutex<Set<ManagedObjectID>?>(nil)

        init(_ ids: [ManagedObjectID]) { self.ids = ids }

        var made: Set<ManagedObjectID> {
            built.withLock { built in
                if let built { return built }
                let made = Set(ids)
                built = made
                return made
            }
        }
    }

    private enum Form {
        case set(Set<ManagedObjectID>)
        case list(List)
    }

    private let form: Form

    init(_ set: Set<ManagedObjectID>) { form = .set(set) }

    /// IDs as collected (repeats allowed).
    init(collecting ids: [ManagedObjectID]) { form = ids.isEmpty ? .set([]) : .list(List(ids)) }

    var set: Set<ManagedObjectID> {
        switch form {
        case .set(let set): set
        case .list(let list): list.made
        }
    }

    static func == (lhs: CollectedObjectIDs, rhs: CollectedObjectIDs) -> Bool { lhs.set == rhs.set }
    func hash(into hasher: inout Hasher) { hasher.combine(set) }
}
