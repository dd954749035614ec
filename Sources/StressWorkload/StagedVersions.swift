import Foundation
import PostgresClient
import PostgresData
import PostgresMigrations

/// Three versions of a small model and the staged plan between them, shared by the tests
/// and by `postgres-data-stress mode=staged` (the process a test kills in the middle of a
/// stage): a renamed attribute, a name split in two by a custom stage, a renamed entity, a
/// new unique attribute, dropped columns.
public enum StagedVersions {
    public static let v1 = ModelVersion("1", model: ManagedObjectModel(entities: [
        EntityDescription(name: "Person", properties: [
            .attribute(AttributeDescription(name: "name", type: .string)),
            .attribute(AttributeDescription(name: "age", type: .integer32, defaultValue: .integer(0))),
        ]),
    ]))
    public static let v2 = ModelVersion("2", model: ManagedObjectModel(entities: [
        EntityDescription(name: "Person", properties: [
            .attribute(AttributeDescription(name: "firstName", type: .string)),
            .attribute(AttributeDescription(name: "lastName", type: .string, isOptional: true)),
            .attribute(AttributeDescription(name: "years", type: .integer32, defaultValue: .integer(0))),
        ], indexes: [["lastName"]]),
    ]), renamedProperties: ["Person": ["years": "age"]])
    public static let v3 = ModelVersion("3", model: ManagedObjectModel(entities: [
        EntityDescription(name: "Member", properties: [
            .attribute(AttributeDescription(name: "firstName", type: .string)),
            .attribute(AttributeDescription(name: "lastName", type: .string, isOptional: true)),
            .attribute(AttributeDescription(name: "email", type: .string, isOptional: true)),
        ], uniquenessConstraints: [["email"]], indexes: [["lastName"]]),
    ]), renamedEntities: ["Member": "Person"])

    /// What the custom stage does once its SQL has run: go on, fail, or announce itself and
    /// wait (to be killed there).
    public enum AfterSplit: Sendable { case proceed, fail, announceAndWait }

    /// The stage's failure, when asked for.
    public struct StageFailure: Error {}

    /// The plan: names split in SQL (a set-based statement, the way to touch every row),
    /// then one-word names completed through the context; then a lightweight stage.
    public static func plan(_ afterSplit: AfterSplit = .proceed) throws -> StagedMigrationPlan {
        try StagedMigrationPlan(stages: [
            .custom(from: v1, to: v2) { context in
                try await context.persistentStoreCoordinator.connectionPool.withConnection { connection in
                    _ = try await connection.execute(script: """
                        UPDATE person SET first_name = split_part(name, ' ', 1), last_name = nullif(split_part(name, ' ', 2), '')
                        WHERE first_name IS NULL
                        """)
                }
                switch afterSplit {
                case .proceed: break
                case .fail: throw StageFailure()
                case .announceAndWait:
                    FileHandle.standardOutput.write(Data("in the custom stage\n".utf8))
                    try await Task.sleep(for: .seconds(600))
                }
                let solo = try await context.fetch(FetchRequest<ManagedObject>(entityName: "Person",
                                                                               predicate: try FetchPredicate(format: "lastName == nil")))
                for person in solo { try person.setValue("Unknown", forKey: "lastName") }
                try await context.save()
            },
            .lightweight(from: v2, to: v3),
        ])
    }

    /// A database at version 1, made as a development database is (createSchemaIfMissing),
    /// with 1,990 two-word names and 10 one-word ones.
    public static func populateVersion1(_ configuration: Configuration) async throws {
        let container = PersistentContainer(name: "V1", model: v1.model)
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        try await container.persistentStoreCoordinator.connectionPool.withConnection { connection in
            _ = try await connection.execute(script: """
                INSERT INTO person (name, age) SELECT 'First' || i || ' Last' || i, i % 90 FROM generate_series(1, 1990) AS i;
                INSERT INTO person (name, age) SELECT 'Solo' || i, 30 FROM generate_series(1, 10) AS i;
                """)
        }
        await container.persistentStoreCoordinator.close()
    }
}
