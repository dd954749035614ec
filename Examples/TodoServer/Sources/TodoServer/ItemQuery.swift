import Hummingbird
import HummingbirdCore
import PostgresData

/// The query parameters of `GET /items`: filters (`done`, `search`, `minWeight`) turned into
/// a predicate whose values are bind parameters, and a page (`limit` ≤ 200, `offset`).
struct ItemQuery: Sendable {
    var predicate: FetchPredicate?
    var limit = 50
    var offset = 0

    static let maximumLimit = 200
    /// Newest first.
    static let order = [FetchSortDescriptor(key: "createdAt", ascending: false), FetchSortDescriptor(key: "name")]

    init(_ parameters: FlatDictionary<Substring, Substring>) throws {
        var formats: [String] = []
        var arguments: [Any?] = []
        if let done = parameters["done"] {
            guard let value = Bool(String(done)) else { throw HTTPError(.badRequest, message: "done is true or false, not \(done)") }
            formats.append("done == %@")
            arguments.append(value)
        }
        if let search = parameters["search"], !search.isEmpty {
            formats.append("name CONTAINS[cd] %@")
            arguments.append(String(search))
        }
        if let minWeight = parameters["minWeight"] {
            guard let value = Int32(String(minWeight)) else { throw HTTPError(.badRequest, message: "minWeight is a whole number, not \(minWeight)") }
            formats.append("weight >= %@")
            arguments.append(value)
        }
        if !formats.isEmpty {
            predicate = try FetchPredicate(format: formats.joined(separator: " AND "), argumentArray: arguments)
        }
        if let text = parameters["limit"] {
            guard let value = Int(String(text)), (1...Self.maximumLimit).contains(value) else {
                throw HTTPError(.badRequest, message: "limit is a number from 1 to \(Self.maximumLimit), not \(text)")
            }
            limit = value
        }
        if let text = parameters["offset"] {
            guard let value = Int(String(text)), value >= 0, value <= 1_000_000 else {
                throw HTTPError(.badRequest, message: "offset is a number from 0 to 1000000, not \(text)")
            }
            offset = value
        }
    }
}
