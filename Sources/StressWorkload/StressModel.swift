import PostgresClient
import PostgresData
import PostgresDataTesting

/// The shared graph the stress workers change: boards holding cards, cards carrying labels
/// (a many-to-many relationship, so a join table), and counters many workers increment.
@Entity(tableName: "stress_board")
public final class Board: ManagedObject {
    @Attribute(.unique) public var name: String
    @Relationship(deleteRule: .cascade, inverse: \Card.board) public var cards: Set<Card>
}

/// A card, identified across processes by the `token` its worker gave it.
@Entity(tableName: "stress_card")
public final class Card: ManagedObject {
    @Attribute(.unique) public var token: String
    public var title: String
    public var revision: Int64 = 0
    public var board: Board?
    @Relationship(inverse: \Label.cards) public var labels: Set<Label>
}

/// A label shared by many cards (the other side of the join table).
@Entity(tableName: "stress_label")
public final class Label: ManagedObject {
    @Attribute(.unique) public var name: String
    public var cards: Set<Card>
}

/// A counter incremented by many contexts at once: a lost update shows as a total too low.
@Entity(tableName: "stress_counter")
public final class Counter: ManagedObject {
    @Attribute(.unique) public var name: String
    public var value: Int64 = 0
}

/// The stress workload's model and its shared graph.
public enum StressModel {
    /// Board, Card, Label and Counter.
    public static let model = ManagedObjectModel(Board.self, Card.self, Label.self, Counter.self)
    /// The boards, labels and counters every worker shares.
    public static let boardNames = (1...4).map { "board \($0)" }
    public static let labelNames = (1...6).map { "label \($0)" }
    public static let counterNames = ["hits", "misses"]

    /// A new database (``TestDatabase/fresh(prefix:)``) with the model's schema and the shared graph.
    public static func seededDatabase(prefix: String) async throws -> Configuration {
        let configuration = try await TestDatabase.fresh(prefix: prefix)
        let setup = PersistentContainer(name: "Setup", model: model)
        try await setup.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        try await seed(setup)
        await setup.persistentStoreCoordinator.close()
        return configuration
    }

    /// Creates the shared boards, labels and counters.
    public static func seed(_ container: PersistentContainer) async throws {
        try await container.performBackgroundTask { context in
            for name in boardNames { Board(context: context).name = name }
            for name in labelNames { Label(context: context).name = name }
            for name in counterNames { Counter(context: context).name = name }
            try context.save()
        }
    }
}
