import Foundation
import Hummingbird
import Logging
import PostgresData
import TodoExample

/// The routes of `/items`: each request is one unit of work on a context of its own.
///
/// - `GET /items?done=&search=&minWeight=&limit=&offset=` — a page, newest first.
/// - `POST /items` — creates (201, `Location`, `ETag`).
/// - `GET /items/:id` — one item (`ETag`).
/// - `PATCH /items/:id` — changes fields; with `If-Match`, only the version named. A change
///   that meets another writer's (an older `If-Match`, or a save conflict) is a 409.
/// - `DELETE /items/:id` — 204; `If-Match` as for `PATCH`.
/// - `GET /items/changes` — server-sent events: the differences of the results as they
///   change, other processes' saves included (``ItemChanges``).
struct ItemController: Sendable {
    let container: PersistentContainer

    func addRoutes(to group: RouterGroup<BasicRequestContext>) {
        group.get(use: list)
        group.post(use: create)
        group.get("changes", use: ItemChanges(container: container).stream)
        group.get(":id", use: show)
        group.patch(":id", use: update)
        group.delete(":id", use: delete)
    }

    @Sendable func list(_ request: Request, context: BasicRequestContext) async throws -> ItemPage {
        let query = try ItemQuery(request.uri.queryParameters)
        let unit = container.newBackgroundContext()
        return try await answering(context) {
            try await unit.perform {
                var fetch = FetchRequest<TodoItem>(predicate: query.predicate, sortDescriptors: ItemQuery.order)
                fetch.fetchLimit = query.limit
                fetch.fetchOffset = query.offset
                fetch.returnsObjectsAsFaults = false
                let items = try await unit.fetch(fetch)
                var counting = fetch
                counting.fetchLimit = 0
                counting.fetchOffset = 0
                let total = try await unit.count(for: counting)
                return ItemPage(items: items.map(ItemResource.init), total: total, limit: query.limit, offset: query.offset)
            }
        }
    }

    @Sendable func create(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let new = try await request.decode(as: NewItem.self, context: context)
        let unit = container.newBackgroundContext()
        let item = try await answering(context) {
            try await unit.perform {
                let item = TodoItem(context: unit)
                item.name = new.name
                item.createdAt = Date()
                item.done = new.done ?? false
                item.weight = new.weight ?? 0
                try await unit.save()
                return ItemResource(item)
            }
        }
        var response = try item.response(from: request, context: context)
        response.status = .created
        response.headers[.location] = "/items/\(item.id)"
        response.headers[.eTag] = item.entityTag
        return response
    }

    @Sendable func show(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try itemID(context)
        let unit = container.newBackgroundContext()
        let item = try await answering(context) {
            try await unit.perform { ItemResource(try await Self.item(id, in: unit)) }
        }
        var response = try item.response(from: request, context: context)
        response.headers[.eTag] = item.entityTag
        return response
    }

    @Sendable func update(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try itemID(context)
        let expected = try Self.expectedVersion(request)
        let change = try await request.decode(as: ItemChange.self, context: context)
        let unit = container.newBackgroundContext()
        // Another writer's change between this request's read and its save is a conflict too.
        unit.mergePolicy = .error
        let item = try await answering(context) {
            try await unit.perform {
                let item = try await Self.item(id, in: unit)
                try Self.check(item, expected)
                if let name = change.name { item.name = name }
                if let done = change.done { item.done = done }
                if let weight = change.weight { item.weight = weight }
                try await unit.save()
                return ItemResource(item)
            }
        }
        var response = try item.response(from: request, context: context)
        response.headers[.eTag] = item.entityTag
        return response
    }

    @Sendable func delete(_ request: Request, context: BasicRequestContext) async throws -> HTTPResponse.Status {
        let id = try itemID(context)
        let expected = try Self.expectedVersion(request)
        let unit = container.newBackgroundContext()
        unit.mergePolicy = .error
        try await answering(context) {
            try await unit.perform {
                let item = try await Self.item(id, in: unit)
                try Self.check(item, expected)
                unit.delete(item)
                try await unit.save()
            }
        }
        return .noContent
    }

    // MARK: Helpers

    private func itemID(_ context: BasicRequestContext) throws -> ManagedObjectID {
        let key = try context.parameters.require("id", as: Int64.self)
        guard let id = container.persistentStoreCoordinator.managedObjectID(for: TodoItem.self, primaryKey: key) else {
            throw HTTPError(.internalServerError)
        }
        return id
    }

    private static func item(_ id: ManagedObjectID, in context: ManagedObjectContext) async throws -> TodoItem {
        guard let item = try await context.existingObject(with: id) as? TodoItem else { throw HTTPError(.notFound) }
        return item
    }

    /// The version an `If-Match` header names (`"12345"`, `W/"12345"`), or nil without one.
    private static func expectedVersion(_ request: Request) throws -> UInt32? {
        guard let header = request.headers[.ifMatch] else { return nil }
        let tag = header.hasPrefix("W/") ? header.dropFirst(2) : Substring(header)
        guard let version = UInt32(tag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))) else {
            throw HTTPError(.badRequest, message: "If-Match names a version this server sent as ETag, like \"12345\"")
        }
        return version
    }

    private static func check(_ item: TodoItem, _ expected: UInt32?) throws {
        guard let expected, item.rowVersion != expected else { return }
        throw HTTPError(.conflict, headers: [.eTag: ItemResource(item).entityTag],
                        message: "the item changed since version \(expected); read it again and reapply the change")
    }

    /// Runs a unit of work, answering the store's errors as HTTP statuses.
    private func answering<T>(_ context: BasicRequestContext, _ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as PostgresDataError {
            throw Self.httpError(error, logger: context.logger)
        }
    }

    static func httpError(_ error: PostgresDataError, logger: Logger) -> HTTPError {
        switch error {
        case .objectNotFound: return HTTPError(.notFound)
        case .validation(let failures):
            return HTTPError(.unprocessableContent, message: failures.map { "\($0)" }.joined(separator: "; "))
        case .mergeConflict:
            return HTTPError(.conflict, message: "another request changed the item meanwhile; read it again and reapply the change")
        case .constraintViolation(_, let name, _):
            return HTTPError(.conflict, message: "the change breaks the constraint \(name)")
        case .shuttingDown:
            return HTTPError(.serviceUnavailable, headers: [.retryAfter: "1"], message: "the server is shutting down")
        default:
            logger.error("store error", metadata: ["error": "\(error)"])
            return HTTPError(.internalServerError)
        }
    }
}
