import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import Testing

@Entity final class TodoList: ManagedObject {
    var title: String
    @Relationship(deleteRule: .cascade, inverse: \Item.list) var items: Set<Item>
}

@Entity final class Item: ManagedObject {
    @Attribute(minLength: 1, maxLength: 100) var name: String
    var createdAt: Date = Date(timeIntervalSince1970: 0)
    var done = false
    @Attribute(minValue: 0, maxValue: 1000) var weight = 0
    var notes: String?
    var list: TodoList?
    @Transient var scratch = 0
}

@Entity(tableName: "team", indexes: [["name"]])
final class Team: ManagedObject {
    @Attribute(.unique) var name: String
    @Relationship(deleteRule: .deny, inverse: \Player.team) var players: Set<Player>
}

@Entity(uniquenessConstraints: [["name", "team"]])
final class Player: ManagedObject {
    var name: String
    var team: Team?
    @Relationship(inverse: \Tag.players) var tags: Set<Tag>
}

@Entity final class Tag: ManagedObject {
    var label: String
    var players: Set<Player>
}

struct Settings: Codable, Hashable, Sendable {
    var theme: String
    var fontSize: Int
}

@Entity final class Profile: ManagedObject {
    var id16: Int16 = 0
    var id32: Int32 = 0
    var ratio: Double = 0
    var small: Float = 0
    var price: Decimal = 0
    var avatar: Data?
    var token: UUID?
    var homepage: URL?
    var settings: Settings?
    @Attribute(regularExpression: "[A-Z]{3}") var code = "ABC"
}

let testModel = ManagedObjectModel(TodoList.self, Item.self, Team.self, Player.self, Tag.self, Profile.self, Person.self, Choice.self, Product.self)

/// A container on a database of its own, with the test model's schema created.
func makeContainer() async throws -> PersistentContainer {
    let configuration = try await TestDatabase.fresh(prefix: "pd_data")
    let container = PersistentContainer(name: "Test", model: testModel)
    try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
    return container
}

extension PersistentContainer {
    /// Saves a new item called `name` from a context of its own and returns its ID.
    func saveItem(named name: String) async throws -> ManagedObjectID {
        try await performBackgroundTask { context in
            let item = Item(context: context)
            item.name = name
            try context.save()
            return item.objectID
        }
    }

    /// The values of the first column of `sql`'s rows, read with a raw connection.
    func rawIntegers(_ sql: String) async throws -> [Int64] {
        try await persistentStoreCoordinator.connectionPool.withConnection { connection in
            try await connection.query(sql).map { try $0.decode(Int64.self, at: 0) }
        }
    }

    func rawStrings(_ sql: String) async throws -> [String] {
        try await persistentStoreCoordinator.connectionPool.withConnection { connection in
            try await connection.query(sql).map { try $0.decode(String.self, at: 0) }
        }
    }

    func rawExecute(_ sql: String) async throws {
        try await persistentStoreCoordinator.connectionPool.withConnection { connection in
            _ = try await connection.execute(script: sql)
        }
    }
}

/// The error `body` throws, as a PostgresDataError.
func captureDataError(_ body: () async throws -> Void) async -> PostgresDataError? {
    do {
        try await body()
        return nil
    } catch let error as PostgresDataError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}
