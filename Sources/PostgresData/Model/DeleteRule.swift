/// What deleting an object does to the objects its relationship points at.
///
/// Core Data equivalent: `NSDeleteRule`. The schema carries the rule too: the foreign key's
/// `ON DELETE` clause (`SET NULL`, `CASCADE`, `RESTRICT`, `NO ACTION`), so batch deletes
/// that bypass contexts obey it.
public enum DeleteRule: String, Sendable, Hashable {
    /// The destination objects stay; their inverse relationship is set to nil (`ON DELETE SET NULL`).
    case nullify
    /// The destination objects are deleted too (`ON DELETE CASCADE`).
    case cascade
    /// Deleting fails while the relationship has a destination (`ON DELETE RESTRICT`).
    case deny
    /// Nothing is done; the database refuses the dangling reference at commit (`ON DELETE NO ACTION`).
    case noAction

    var onDeleteSQL: String {
        switch self {
        case .nullify: "SET NULL"
        case .cascade: "CASCADE"
        case .deny: "RESTRICT"
        case .noAction: "NO ACTION"
        }
    }
}
