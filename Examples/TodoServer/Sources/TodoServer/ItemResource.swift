import Foundation
import Hummingbird
import TodoExample

/// A to-do item as the API shows it; `version` is the row version, also sent as the `ETag`.
struct ItemResource: ResponseCodable, Equatable {
    var id: Int64
    var name: String
    var done: Bool
    var weight: Int32
    var createdAt: Date
    var version: UInt32

    /// The resource of a saved item (read on its context's queue).
    init(_ item: TodoItem) {
        id = item.objectID.primaryKey ?? 0
        name = item.name
        done = item.done
        weight = item.weight
        createdAt = item.createdAt
        version = item.rowVersion ?? 0
    }

    /// `"<version>"`, the item's entity tag.
    var entityTag: String { "\"\(version)\"" }
}

/// A page of items and how many match in all.
struct ItemPage: ResponseCodable {
    var items: [ItemResource]
    var total: Int
    var limit: Int
    var offset: Int
}

/// The body of `POST /items`.
struct NewItem: Decodable {
    var name: String
    var done: Bool?
    var weight: Int32?
}

/// The body of `PATCH /items/:id`: the fields to change.
struct ItemChange: Decodable {
    var name: String?
    var done: Bool?
    var weight: Int32?
}
