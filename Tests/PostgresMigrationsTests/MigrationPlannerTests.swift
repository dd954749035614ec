import Foundation
@testable import PostgresMigrations
import Testing

/// The pure planner: states and plans from files and history, with no database.
struct MigrationPlannerTests {
    static func file(_ version: String, _ sql: String = "SELECT 1;", down: String? = "SELECT 0;") throws -> Migration {
        try Migration(fileName: "\(version)_m\(version).sql",
                      contents: "-- migrate:up\n\(sql)\n" + (down.map { "-- migrate:down\n\($0)\n" } ?? ""))
    }

    static func applied(_ migration: Migration, complete: Bool = true, checksum: MigrationChecksum? = nil,
                        kind: AppliedMigration.Kind = .migration) -> AppliedMigration {
        AppliedMigration(version: migration.version, name: migration.name, checksum: checksum ?? migration.checksum, kind: kind,
                         appliedAt: Date(), duration: .zero, appliedBy: "test", statementsApplied: complete ? nil : 1, isComplete: complete)
    }

    @Test func statesCoverEveryCase() throws {
        let files = try ["0001", "0002", "0003", "0004", "0006"].map { try Self.file($0) }
        let gone = try Self.file("0005")
        let history = [
            Self.applied(files[0]),
            Self.applied(files[1], checksum: MigrationChecksum(of: "SELECT 2;")),
            Self.applied(files[3], complete: false),
            Self.applied(gone),
        ]
        let states = MigrationPlanner(migrations: files, history: history).statuses().map { "\($0.version):\($0.state.rawValue)" }
        #expect(states == ["0001:applied", "0002:edited", "0003:out-of-order", "0004:partial", "0005:missing", "0006:pending"])
    }

    @Test func upRefusesEditedFilesAndOutOfOrderOnesUnlessAllowed() throws {
        let files = try ["0001", "0002", "0003"].map { try Self.file($0) }
        let edited = MigrationPlanner(migrations: files, history: [Self.applied(files[0], checksum: MigrationChecksum(of: "x"))])
        #expect { try edited.upPlan() } throws: { "\($0)".contains("0001_m0001.sql: migration 0001 was applied with checksum") }
        let gap = MigrationPlanner(migrations: files, history: [Self.applied(files[0]), Self.applied(files[2])])
        #expect { try gap.upPlan() } throws: { "\($0)".contains("0002_m0002.sql has a version lower than 0003") }
        #expect(try gap.upPlan(allowOutOfOrder: true).map(\.version.text) == ["0002"])
    }

    @Test func upFinishesAPartialMigrationFirstAndStopsAtTheTarget() throws {
        let files = try ["0001", "0002", "0003", "0004"].map { try Self.file($0) }
        let planner = MigrationPlanner(migrations: files, history: [Self.applied(files[0]), Self.applied(files[1], complete: false)])
        #expect(try planner.upPlan().map(\.version.text) == ["0002", "0003", "0004"])
        #expect(try planner.upPlan(to: MigrationVersion("0003")).map(\.version.text) == ["0002", "0003"])
        #expect { try planner.upPlan(to: MigrationVersion("0042")) } throws: { "\($0)" == "no migration has the version 0042" }
    }

    @Test func downRevertsNewestFirstAndNeedsADownSection() throws {
        let files = try [Self.file("0001"), Self.file("0002", down: nil), Self.file("0003")]
        let planner = MigrationPlanner(migrations: files, history: files.map { Self.applied($0) })
        #expect(try planner.downPlan().map(\.0.version.text) == ["0003"])
        #expect { try planner.downPlan(steps: 2) } throws: { "\($0)".contains("0002_m0002.sql has no '-- migrate:down' section") }
        #expect { try planner.downPlan(to: MigrationVersion("0001")) } throws: { "\($0)".contains("no '-- migrate:down'") }
        #expect(try MigrationPlanner(migrations: files, history: [Self.applied(files[0])]).downPlan(to: MigrationVersion("0")).count == 1)
    }

    @Test func aBaselineCoversTheVersionsUpToIt() throws {
        let files = try ["0001", "0002", "0003"].map { try Self.file($0) }
        let planner = MigrationPlanner(migrations: files, history: [Self.applied(files[1], kind: .baseline)])
        #expect(planner.statuses().map(\.state) == [.baseline, .baseline, .pending])
        #expect(try planner.upPlan().map(\.version.text) == ["0003"])
        #expect(try planner.downPlan().isEmpty)
    }
}
