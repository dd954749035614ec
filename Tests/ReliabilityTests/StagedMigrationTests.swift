import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
@testable import PostgresMigrations
import StressWorkload
import Testing

/// Staged migration from Swift model versions: a populated database through three
/// versions — a renamed attribute, a name split in two by a custom stage, a renamed entity,
/// a new unique attribute, dropped columns — with a run that fails in its custom stage and
/// a second run that resumes there.
@Suite struct StagedMigrationTests {
    static let (v1, v2, v3) = (StagedVersions.v1, StagedVersions.v2, StagedVersions.v3)

    @Test func aPopulatedDatabaseGoesThroughThreeVersionsResumingAfterAFailedStage() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_staged")
        try await StagedVersions.populateVersion1(configuration)
        let admin = try await Connection.connect(configuration)
        func strings(_ sql: String) async throws -> [String] { try await admin.query(sql).map { try $0.decode(String.self, at: 0) } }
        func versions() async throws -> [String] {
            try await strings("SELECT version || ':' || complete::text FROM postgres_data_model_stages ORDER BY version")
        }

        // The first run dies in the custom stage, after its SQL ran.
        await #expect(throws: StagedVersions.StageFailure.self) { try await StagedVersions.plan(.fail).migrate(configuration: configuration) }
        let afterFailure = try await versions()
        #expect(afterFailure.map { $0.prefix(4) } == ["0001", "0011", "0012"])
        #expect(try await strings("SELECT column_name::text FROM information_schema.columns WHERE table_name = 'person' ORDER BY 1")
                == ["first_name", "id", "last_name", "name", "years"])

        // The second resumes with the custom stage, and goes to version 3.
        let applied = try await StagedVersions.plan().migrate(configuration: configuration)
        #expect(applied.map(\.version.text) == ["0013", "0014", "0015", "0021", "0022", "0024", "0025"])
        #expect(try await StagedVersions.plan().migrate(configuration: configuration).isEmpty)
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

    /// A process killed (SIGKILL) inside the custom stage: its advisory lock goes with its
    /// connections, the parts it recorded stay recorded, and the next run resumes at the
    /// custom stage.
    @Test func aRunKilledInsideTheCustomStageResumesThere() async throws {
        guard let binary = ChildProcess.builtExecutable(named: "postgres-data-stress") else {
            Issue.record("postgres-data-stress is not built beside the tests: run `swift build --build-tests` first")
            return
        }
        let configuration = try await TestDatabase.fresh(prefix: "pd_staged_kill")
        try await StagedVersions.populateVersion1(configuration)
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = configuration.url(redactingPassword: false)
        let output = try TemporaryFolder.make(prefix: "pd-staged") + "/child.out"
        let child = try ChildProcess([binary, "mode=staged"], environment: environment, outputPath: output, errorPath: output + ".err")
        try await Deadline.poll("the child to reach the custom stage") {
            guard child.isRunning else {
                throw StageChildStopped(errors: (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? "")
            }
            return ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").contains("in the custom stage")
        }
        let admin = try await Connection.connect(configuration)
        let recorded = try await admin.query("SELECT version FROM postgres_data_model_stages ORDER BY version").map { try $0.decode(String.self, at: 0) }
        #expect(recorded == ["0001", "0011", "0012"])
        child.kill()
        _ = await child.exit(within: .seconds(30))

        let applied = try await StagedVersions.plan().migrate(configuration: configuration)
        #expect(applied.map(\.version.text) == ["0013", "0014", "0015", "0021", "0022", "0024", "0025"])
        #expect(try await admin.query("SELECT count(*) FROM member WHERE last_name IS NOT NULL AND first_name LIKE 'First%' OR last_name = 'Unknown'")[0]
            .decode(Int64.self, at: 0) == 2000)
        #expect(try await admin.query("SELECT count(*) FROM postgres_data_model_stages WHERE NOT complete")[0].decode(Int64.self, at: 0) == 0)
        await admin.close()
    }

    struct StageChildStopped: Error, CustomStringConvertible {
        var errors: String
        var description: String { "the staged migration process stopped: \(errors.suffix(2_000))" }
    }

    /// A renamed entity with a many-to-many relationship keeps its links: the join table and
    /// its key column are renamed, and the new version's store loads and reads them.
    @Test func aRenamedEntityKeepsItsManyToManyLinks() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_staged_join")
        let old = ModelVersion("a", model: Self.pair("Player"))
        let new = ModelVersion("b", model: Self.pair("Xplayer"), renamedEntities: ["Xplayer": "Player"])
        let before = PersistentContainer(name: "A", model: old.model)
        try await before.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        try await before.performBackgroundTask { context in
            let player = ManagedObject(entity: try #require(old.model.entitiesByName["Player"]), insertInto: context)
            try player.setValue("Ada", forKey: "name")
            let tag = ManagedObject(entity: try #require(old.model.entitiesByName["Tag"]), insertInto: context)
            try tag.setValue("captain", forKey: "label")
            try player.setValue(Set([tag]), forKey: "tags")
            try context.save()
        }
        await before.persistentStoreCoordinator.close()
        try await StagedMigrationPlan(stages: [.lightweight(from: old, to: new)]).migrate(configuration: configuration)
        let after = PersistentContainer(name: "B", model: new.model)
        try await after.loadPersistentStores(configuration: configuration)
        let labels = try await after.performBackgroundTask { context in
            try context.fetch(FetchRequest<ManagedObject>(entityName: "Xplayer")).flatMap { player in
                (player.value(forKey: "tags") as? Set<ManagedObject> ?? []).compactMap { $0.value(forKey: "label") as? String }
            }
        }
        #expect(labels == ["captain"])
        await after.persistentStoreCoordinator.close()
    }

    static func pair(_ name: String) -> ManagedObjectModel {
        ManagedObjectModel(entities: [
            EntityDescription(name: name, properties: [
                .attribute(AttributeDescription(name: "name", type: .string)),
                .relationship(RelationshipDescription(name: "tags", destination: "Tag", inverse: "players", toMany: true)),
            ]),
            EntityDescription(name: "Tag", properties: [
                .attribute(AttributeDescription(name: "label", type: .string)),
                .relationship(RelationshipDescription(name: "players", destination: name, inverse: "tags", toMany: true)),
            ]),
        ])
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
        // A renamed entity's many-to-many join table and key column are renamed, never
        // dropped and created again.
        let renamedEntity = StagePlan(from: ModelVersion("a", model: Self.pair("Player")),
                                      to: ModelVersion("b", model: Self.pair("Xplayer"), renamedEntities: ["Xplayer": "Player"]))
        #expect(renamedEntity.expand.contains("ALTER TABLE \"player\" RENAME TO \"xplayer\""))
        #expect(renamedEntity.expand.contains("ALTER TABLE \"player_tags\" RENAME TO \"tag_players\""))
        #expect(renamedEntity.expand.contains("ALTER TABLE \"tag_players\" RENAME COLUMN \"player_id\" TO \"xplayer_id\""))
        #expect(!renamedEntity.expand.contains { $0.hasPrefix("CREATE TABLE") })
        #expect(!renamedEntity.contract.contains { $0.contains("DROP TABLE") }, "\(renamedEntity.contract)")
        #expect(throws: MigrationError.self) { try StagedMigrationPlan(stages: [.lightweight(from: Self.v1, to: Self.v2), .lightweight(from: Self.v1, to: Self.v3)]) }
    }
}
