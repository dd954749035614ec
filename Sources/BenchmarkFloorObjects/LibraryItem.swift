import Foundation

/// A row as a library of objects hands it out, for `postgres-data-bench`'s floors: a class
/// in a module of its own, whose values the reading code reaches only through accessors it
/// cannot see into, as an `@Entity` class's values are reached through PostgresData.
///
/// Reading a million objects through such accessors costs the reading loop a retain and a
/// release of each object, which a class of the reading module does without (the compiler
/// sees that nothing in the loop can release it). The key is a public stored property: a
/// library's own identity map reads it directly.
public final class LibraryItem {
    public let id: Int64
    let storedName: String
    let storedCreatedAt: Date
    let storedDone: Bool
    let storedWeight: Int32
    let storedVersion: UInt32

    public init(id: Int64, name: String, createdAt: Date, done: Bool, weight: Int32, version: UInt32) {
        self.id = id
        storedName = name
        storedCreatedAt = createdAt
        storedDone = done
        storedWeight = weight
        storedVersion = version
    }

    public var name: String { storedName }
    public var createdAt: Date { storedCreatedAt }
    public var done: Bool { storedDone }
    public var weight: Int32 { storedWeight }
    public var version: UInt32 { storedVersion }
}
