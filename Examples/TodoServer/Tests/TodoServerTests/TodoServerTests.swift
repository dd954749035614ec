import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresClient
import PostgresData
import PostgresDataTesting
import Testing
import TodoExample
import TodoServer

/// The example server over HTTP (HummingbirdTesting), on a real PostgreSQL migrated at
/// start-up by the server itself.
@Suite struct TodoServerTests {
    static let migrations = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().appendingPathComponent("../../../../migrations").standardized.path

    func application() async throws -> (some ApplicationProtocol, Configuration) {
        let database = try await TestDatabase.fresh(prefix: "pd_todo_server")
        let app = try await buildApplication(TodoServerConfiguration(database: database, migrationsPath: Self.migrations, port: 0))
        return (app, database)
    }

    static func json(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

    static func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(type, from: Data(buffer: response.body))
    }

    struct Item: Decodable, Equatable {
        var id: Int64
        var name: String
        var done: Bool
        var weight: Int32
        var version: UInt32
    }

    struct Page: Decodable {
        var items: [Item]
        var total: Int
        var limit: Int
        var offset: Int
    }

    @Test func createListUpdateAndDeleteWithVersionsAsEntityTags() async throws {
        let (app, database) = try await application()
        try await app.test(.router) { client in
            var created: [Item] = []
            for (name, weight) in [("Buy milk", 2), ("Walk the dog", 5), ("Buy bread", 1)] {
                let response = try await client.execute(uri: "/items", method: .post, headers: [.contentType: "application/json"],
                                                        body: Self.json(#"{"name": "\#(name)", "weight": \#(weight)}"#))
                #expect(response.status == .created)
                let item = try Self.decode(Item.self, response)
                #expect(response.headers[.location] == "/items/\(item.id)")
                #expect(response.headers[.eTag] == "\"\(item.version)\"")
                created.append(item)
            }
            // A predicate from the query, its values bound; a page of it.
            let page = try await client.execute(uri: "/items?search=BUY&limit=1&offset=0", method: .get)
            #expect(page.status == .ok)
            let first = try Self.decode(Page.self, page)
            #expect(first.total == 2 && first.items.count == 1 && first.items[0].name == "Buy bread", "newest first")
            let heavy = try Self.decode(Page.self, try await client.execute(uri: "/items?minWeight=2&done=false", method: .get))
            #expect(Set(heavy.items.map(\.name)) == ["Buy milk", "Walk the dog"])

            // A change that names the current version succeeds and moves it.
            let milk = created[0]
            let changed = try await client.execute(uri: "/items/\(milk.id)", method: .patch,
                                                   headers: [.contentType: "application/json", .ifMatch: "\"\(milk.version)\""],
                                                   body: Self.json(#"{"done": true}"#))
            #expect(changed.status == .ok)
            let after = try Self.decode(Item.self, changed)
            #expect(after.done && after.version != milk.version)
            // One that names the old version is a conflict and changes nothing.
            let stale = try await client.execute(uri: "/items/\(milk.id)", method: .patch,
                                                 headers: [.contentType: "application/json", .ifMatch: "\"\(milk.version)\""],
                                                 body: Self.json(#"{"name": "Buy oat milk"}"#))
            #expect(stale.status == .conflict)
            #expect(stale.headers[.eTag] == "\"\(after.version)\"")
            let staleDelete = try await client.execute(uri: "/items/\(milk.id)", method: .delete, headers: [.ifMatch: "\"\(milk.version)\""])
            #expect(staleDelete.status == .conflict)
            let deleted = try await client.execute(uri: "/items/\(milk.id)", method: .delete, headers: [.ifMatch: "\"\(after.version)\""])
            #expect(deleted.status == .noContent)
            #expect(try await client.execute(uri: "/items/\(milk.id)", method: .get).status == .notFound)
            let shown = try await client.execute(uri: "/items/\(created[1].id)", method: .get)
            #expect(try Self.decode(Item.self, shown) == created[1])
        }
        // What the database holds.
        let connection = try await Connection.connect(database)
        let rows = try await connection.query("SELECT name, done FROM items ORDER BY name")
        #expect(try rows.map { try $0.decode(String.self, at: 0) } == ["Buy bread", "Walk the dog"])
        await connection.close()
    }

    @Test func badRequestsGetClearStatusesAndChangeNothing() async throws {
        let (app, database) = try await application()
        try await app.test(.router) { client in
            #expect(try await client.execute(uri: "/items?limit=0", method: .get).status == .badRequest)
            #expect(try await client.execute(uri: "/items?limit=100000000000000000000", method: .get).status == .badRequest)
            #expect(try await client.execute(uri: "/items?done=maybe", method: .get).status == .badRequest)
            #expect(try await client.execute(uri: "/items/not-a-number", method: .get).status == .badRequest)
            #expect(try await client.execute(uri: "/items/9223372036854775807", method: .get).status == .notFound)
            let empty = try await client.execute(uri: "/items", method: .post, headers: [.contentType: "application/json"],
                                                 body: Self.json(#"{"name": ""}"#))
            #expect(empty.status == .unprocessableContent)
            let negative = try await client.execute(uri: "/items", method: .post, headers: [.contentType: "application/json"],
                                                    body: Self.json(#"{"name": "x", "weight": -1}"#))
            #expect(negative.status == .unprocessableContent)
            let garbage = try await client.execute(uri: "/items/1", method: .patch, headers: [.ifMatch: "yesterday"], body: Self.json("{}"))
            #expect(garbage.status == .badRequest)
        }
        let connection = try await Connection.connect(database)
        #expect(try await connection.query("SELECT count(*) FROM items")[0].decode(Int64.self, at: 0) == 0)
        await connection.close()
    }

    @Test func concurrentChangesOfOneVersionLetExactlyOneThrough() async throws {
        let (app, _) = try await application()
        try await app.test(.router) { client in
            let created = try Self.decode(Item.self, try await client.execute(
                uri: "/items", method: .post, headers: [.contentType: "application/json"], body: Self.json(#"{"name": "Contended"}"#)))
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for attempt in 0..<20 {
                    group.addTask {
                        try await client.execute(uri: "/items/\(created.id)", method: .patch,
                                                 headers: [.contentType: "application/json", .ifMatch: "\"\(created.version)\""],
                                                 body: Self.json(#"{"weight": \#(attempt + 1)}"#)).status
                    }
                }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .ok }.count == 1, "\(statuses)")
            #expect(statuses.filter { $0 == .conflict }.count == 19, "\(statuses)")
        }
    }

    @Test func theLiveEndpointStreamsDifferencesOfThisServersAndOtherProcessesSaves() async throws {
        let (app, database) = try await application()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let events = try ServerSentEvents(port: port, path: "/items/changes?done=false")
            defer { events.close() }
            #expect(try await events.next(within: .seconds(30)).event == "ready")

            // Through this server.
            let created = try Self.decode(Item.self, try await client.execute(
                uri: "/items", method: .post, headers: [.contentType: "application/json"], body: Self.json(#"{"name": "Through HTTP"}"#)))
            let first = try await events.next(within: .seconds(30))
            #expect(first.event == "change")
            #expect(first.data.contains(#""type":"insert""#) && first.data.contains(#""id":\#(created.id)"#), "\(first.data)")

            // Another process: a coordinator of its own, sharing nothing but the database.
            let other = PersistentContainer(name: "Other", model: todoModel)
            try await other.loadPersistentStores(configuration: database, options: .init(persistentHistoryTracking: true))
            let context = other.newBackgroundContext()
            let otherID = try await context.perform {
                let item = TodoItem(context: context)
                item.name = "From another process"
                item.createdAt = Date()
                try await context.save()
                return item.objectID.primaryKey ?? 0
            }
            await other.persistentStoreCoordinator.close()
            let second = try await events.next(within: .seconds(30))
            #expect(second.event == "change")
            #expect(second.data.contains(#""id":\#(otherID)"#) && second.data.contains(#""type":"insert""#), "\(second.data)")
            #expect(second.data.contains(#""ids":[\#(otherID),\#(created.id)]"#), "newest first: \(second.data)")

            // An item leaving the filter is a delete of the results.
            _ = try await client.execute(uri: "/items/\(created.id)", method: .patch, headers: [.contentType: "application/json"],
                                         body: Self.json(#"{"done": true}"#))
            let third = try await events.next(within: .seconds(30))
            #expect(third.data.contains(#""type":"delete""#) && third.data.contains(#""id":\#(created.id)"#), "\(third.data)")
        }
    }
}
