import PostgresData
@testable import PostgresMigrations
import Testing

/// The staged planner `diff` and `stage` share, without a server: what it does with views,
/// defaults, changed definitions and drops, and that its written form passes lint --strict.
struct StagePlanTests {
    typealias Table = SchemaDescription.Table

    static let old = SchemaDescription(tables: [Table(
        name: "items",
        columns: [.init(name: "id", type: "bigint", isNullable: false), .init(name: "weight", type: "integer", isNullable: false, defaultExpression: "0"),
                  .init(name: "legacy", type: "text", isNullable: false), .init(name: "label", type: "text", isNullable: true)],
        constraints: [.init(name: "items_pkey", kind: .primaryKey, definition: "PRIMARY KEY (id)"),
                      .init(name: "items_weight_check", kind: .check, definition: "CHECK ((weight >= 0))")],
        indexes: [.init(name: "items_weight_idx", definition: "CREATE INDEX items_weight_idx ON items USING btree (weight)"),
                  .init(name: "items_old_idx", definition: "CREATE INDEX items_old_idx ON items USING btree (label)")])])

    static let new = SchemaDescription(tables: [Table(
        name: "items",
        columns: [.init(name: "id", type: "bigint", isNullable: false), .init(name: "weight", type: "bigint", isNullable: false, defaultExpression: "1"),
                  .init(name: "label", type: "text", isNullable: false)],
        constraints: [.init(name: "items_pkey", kind: .primaryKey, definition: "PRIMARY KEY (id)"),
                      .init(name: "items_weight_check", kind: .check, definition: "CHECK ((weight > 0))")],
        indexes: [.init(name: "items_weight_idx", definition: "CREATE INDEX items_weight_idx ON items USING btree (weight DESC)")])])

    static let view = DependentView(name: "heavy_items", isMaterialized: false, definition: " SELECT id, weight FROM items WHERE weight > 10;",
                                    table: "items", columns: ["id", "weight"])
    static let legacyReader = DependentView(name: "legacy_report", isMaterialized: false, definition: " SELECT legacy FROM items;",
                                            table: "items", columns: ["legacy"])

    @Test func aTypeChangeDropsAndRecreatesTheViewsReadingTheColumn() {
        let plan = StagePlan(from: Self.old, to: Self.new, views: [Self.view])
        let alter = #"ALTER TABLE "items" ALTER COLUMN "weight" TYPE bigint USING "weight"::bigint"#
        let position = plan.expand.firstIndex(of: alter)
        #expect(position != nil)
        if let position {
            #expect(plan.expand[position - 1] == #"DROP VIEW IF EXISTS "heavy_items""#)
            #expect(plan.expand[position + 1] == #"CREATE VIEW "heavy_items" AS SELECT id, weight FROM items WHERE weight > 10"#)
        }
        #expect(plan.expand.contains(#"ALTER TABLE "items" ALTER COLUMN "weight" SET DEFAULT 1"#))
        #expect(plan.sql(plan.expand).contains("-- lint:ignore column-type-change — integer → bigint"))
    }

    @Test func changedDefinitionsAreReplacedWithoutABlockingScan() {
        let plan = StagePlan(from: Self.old, to: Self.new)
        #expect(plan.expand.contains(#"ALTER TABLE "items" DROP CONSTRAINT IF EXISTS "items_weight_check""#))
        #expect(plan.expand.contains(#"ALTER TABLE "items" ADD CONSTRAINT "items_weight_check" CHECK ((weight > 0)) NOT VALID"#))
        #expect(plan.validate.contains(#"ALTER TABLE "items" VALIDATE CONSTRAINT "items_weight_check""#))
        #expect(plan.indexes == [
            #"CREATE INDEX CONCURRENTLY IF NOT EXISTS "items_weight_idx_pd_new" ON items USING btree (weight DESC)"#,
            #"DROP INDEX CONCURRENTLY IF EXISTS "items_weight_idx""#,
            #"ALTER INDEX IF EXISTS "items_weight_idx_pd_new" RENAME TO "items_weight_idx""#,
        ])
        // A column becoming required goes through a validated CHECK.
        #expect(plan.validate.contains(#"ALTER TABLE "items" ALTER COLUMN "label" SET NOT NULL"#))
    }

    @Test func dropsNeedToBeAskedForAndNeverPullAColumnFromUnderAView() {
        let kept = StagePlan(from: Self.old, to: Self.new, includeDrops: false)
        #expect(kept.contract.isEmpty)
        #expect(kept.notes.contains { $0.contains(#""items"."legacy" is not in the new schema; kept"#) })
        let dropped = StagePlan(from: Self.old, to: Self.new, views: [Self.legacyReader])
        #expect(!dropped.contract.contains { $0.contains("legacy") })
        #expect(dropped.notes.contains { $0.contains("the views legacy_report read it") })
        #expect(dropped.contract.contains(#"DROP INDEX CONCURRENTLY IF EXISTS "items_old_idx""#))
        let all = StagePlan(from: Self.old, to: Self.new)
        #expect(all.contract.contains(#"ALTER TABLE "items" DROP COLUMN IF EXISTS "legacy""#))
    }

    /// Written as `diff --write` writes them, the parts lint clean even with --strict.
    @Test func theWrittenPartsPassLintStrict() throws {
        let plan = StagePlan(from: Self.old, to: Self.new, views: [Self.view])
        let migrations = try plan.parts.enumerated().filter { !$0.element.statements.isEmpty }.map { offset, part in
            try Migration(fileName: "000\(offset + 1)_\(part.name).sql",
                          contents: (part.isTransactional ? "" : "-- migrate:no-transaction\n") + "-- migrate:up\n" + plan.sql(part.statements))
        }
        #expect(migrations.count == 4)
        let findings = try MigrationLinter().lint(migrations)
        #expect(findings.isEmpty, "\(findings.map(\.description))")
    }
}
