import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
@testable import PostgresMigrations
import Testing

/// Staged migration from Swift model versions: a populated database through three
/// versions — a renamed attribute, a name split in two by a custom stage, a renamed entity,
/// a new unique attribute, dropped columns — with a run that fails in its custom stage and
/// a second run that resumes there.
@Suite struct StagedMigrationTests {
    static let v1 = ModelVersion("1", model: ManagedObjectModel(entities: [
        EntityDescription(name: "Person", properties: [
            .attribute(AttributeDescription(name: "name", type: .string)),
            .attribute(AttributeDescription(name: "age", type: .integer32, defaultValue: .integer(0))),
        ]),
    ]))
    static let v2 = ModelVersion("2", model: ManagedObjectModel(entities: [
        EntityDescription(name: "Person", properties: [
            .attribute(AttributeDescription(name: "firstName", type: .string)),
            .attribute(AttributeDescription(name: "lastName", type: .string, isOptional: true)),
            .attribute(AttributeDescription(name: "years", type: .integer32, defaultValue: .integer(0))),
        ], indexes: [["lastName"]]),
    ]), renamedProperties: ["Person": ["years": "age"]])
    static let v3 = ModelVersion("3", model: ManagedObjectModel(entities: [
        EntityDescription(name: "Member", properties: [
            .attribute(AttributeDescription(name: "firstName", type: .string)),
            .attribute(AttributeDescription(name: "lastName", type: .string, isOptional: true)),
            .attribute(AttributeDescription(name: "email", type: .string, isOptional: true)),
        ], uniquenessConstraints: [["email"]], indexes: [["lastName"]]),
    ]), renamedEntities: ["Member": "Person"])

    /// The custom stage: names split in SQL (a set-based statement, the way to touch every
    /// row), then one-word names completed through the context.
    static func plan(failingAfterTheSplit: Bool) throws -> StagedMigrationPlan {
        try StagedMigrationPlan(stages: [
            .custom(from: v1, to: v2) { context in
                try await context.persistentStoreCoordinator.connectionPool.withConnection { connection in
                    _ = try await connection.execute(script: """
                        UPDATE person SET first_name = split_part(name, ' ', 1), last_name = nullif(split_part(name, ' ', 2), '')
                        WHERE first_name IS NULL
                        """)
                }
                if failingAfterTheSplit { throw StageFailure() }
                let solo = try await context.fetch(FetchRequest<ManagedObject>(entityName: "Person",
                                                                               predicate: try FetchPredicate(format: "lastName == nil")))
                for person in solo { try person.setValue("Unknown", forKey: "lastName") }
                try await context.save()
            },
            .lightweight(from: v2, to: v3),
        ])
    }

    struct StageFailure: Error {}

    @Test func aPopulatedDatabaseGoesThroughThreeVersionsResumingAfterAFailedStage() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_staged")
        // Version 1, made as a development database is (createSchemaIfMissing) and filled.
        let first = PersistentContainer(name: "V1", model: Self.v1.model)
        try await first.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        try await first.persistentStoreCoordinator.connectionPool.withConnection { connection in
            _ = try await connection.execute(script: """
                INSERT INTO person (name, age) SELECT 'First' || i || ' Last' || i, i % 90 FROM generate_series(1, 1990) AS i;
                INSERT INTO person (name, age) SELECT 'Solo' || i, 30 FROM generate_series(1, 10) AS i;
                """)
        }
        await first.persistentStoreCoordinator.close()
        let admin = try await Connection.connect(configuration)
        func strings(_ sql: String) async throws -> [String] { try await admin.query(sql).map { try $0.decode(String.self, at: 0) } }
        func versions() async throws -> [String] {
            try await strings("SELECT version || ':' || complete::text FROM postgres_data_model_stages ORDER BY version")
        }

        // The first run dies in the custom stage, after its SQL ran.
        await #expect(throws: StageFailure.self) { try await Self.plan(failingAfterTheSplit: true).migrate(configuration: configuration) }
        let afterFailure = try await versions()
        #expect(afterFailure.map { $0.prefix(4) } == ["0001", "0011", "0012"])
        #expect(try await strings("SELECT column_name::text FROM information_schema.columns WHERE table_name = 'person' ORDER BY 1")
                == ["first_name", "id", "last_name", "name", "years"])

        // The second resumes with the custom stage, and goes to version 3.
        let applied = try await Self.plan(failingAfterTheSplit: false).migrate(configuration: configuration)
        #expect(applied.map(\.version.text) == ["0013", "0014", "0015", "0021", "0022", "0024", "0025"])
        #expect(try await Self.plan(failingAfterTheSplit: false).migrate(configuration: configuration).isEmpty)
        #expect(try await strings("SELECT column_name::text || ' ' || is_nullable::text FROM information_schema.columns WHERE table_name = 'member' ORDER BY 1")
                == ["email YES", "first_name NO", "id NO", "last_name YES"])
        #expect(try await strings("SELECT count(*)::text FROM pg_index WHERE NOT indisvalid") == ["0"])

        // Version 3's store loads against it (the schema is the model's), with every row.
        let third = PersistentContainer(name: "V3", model: Self.v3.model)
        try await third.loadPersistentStores(configuration: configuration)
        let members = try await third.performBackgroundTask { context in
            try context.fetch(FetchRequest<ManagedObject>(entityName: "Member", sortDescriptors: [FetchSortDescriptor(key: "id")]))
                .map { "\($0.value(forKey: "firstName") as? String ?? "?") \($0.value(forKey: "lastName") as? String ?? "?")" }
        }
        #expect(members.count == 2000)
        #expect(members.first == "First1 Last1" && members.last == "Solo10 Unknown")
        // The new unique key holds.
        let duplicate = await #expect(throws: PostgresDataError.self) {
            try await third.performBackgroundTask { context in
                for _ in 0..<2 {
                    let member = ManagedObject(entity: try #require(Self.v3.model.entitiesByName["Member"]), insertInto: context)
                    try member.setValue("Twin", forKey: "firstName")
                    try member.setValue("twin@example.com", forKey: "email")
                }
                try context.save()
            }
        }
        #expect(duplicate?.sqlState == "23505" || duplicate.map { "\($0)" }?.contains("email") == true)
        await third.persistentStoreCoordinator.close()
        await admin.close()
    }

    @Test func aStagesSQLRenamesAndFollowsTheSafePatterns() throws {
        let toV2 = StagePlan(from: Self.v1, to: Self.v2)
        #expect(toV2.expand.contains("ALTER TABLE \"person\" RENAME COLUMN \"age\" TO \"years\""))
        #expect(toV2.expand.contains("ALTER TABLE \"person\" ADD COLUMN \"first_name\" text"))
        #expect(toV2.expand.contains { $0.contains("CHECK (\"first_name\" IS NOT NULL) NOT VALID") })
        #expect(toV2.expand.contains("ALTER TABLE \"person\" ALTER COLUMN \"name\" DROP NOT NULL"))
        #expect(toV2.indexes.allSatisfy { $0.hasPrefix("CREATE INDEX CONCURRENTLY IF NOT EXISTS") } && toV2.indexes.count == 1)
        #expect(toV2.validate == [
            "ALTER TABLE \"person\" VALIDATE CONSTRAINT \"person_first_name_not_null\"",
            "ALTER TABLE \"person\" ALTER COLUMN \"first_name\" SET NOT NULL",
            "ALTER TABLE \"person\" DROP CONSTRAINT IF EXISTS \"person_first_name_not_null\"",
        ])
        #expect(toV2.contract == ["ALTER TABLE \"person\" DROP COLUMN IF EXISTS \"name\""])
        #expect(!toV2.expand.contains { $0.contains("DROP COLUMN") || $0.contains("ADD COLUMN \"first_name\" text NOT NULL") })

        let toV3 = StagePlan(from: Self.v2, to: Self.v3)
        #expect(toV3.expand.first == "ALTER TABLE \"person\" RENAME TO \"member\"")
        #expect(toV3.expand.contains { $0.contains("RENAME CONSTRAINT \"person_pkey\" TO \"member_pkey\"") })
        #expect(toV3.indexes.contains { $0.hasPrefix("CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS") })
        #expect(toV3.contract == ["ALTER TABLE \"member\" DROP COLUMN IF EXISTS \"years\""])
        #expect(throws: MigrationError.self) { try StagedMigrationPlan(stages: [.lightweight(from: Self.v1, to: Self.v2), .lightweight(from: Self.v1, to: Self.v3)]) }
    }
}
