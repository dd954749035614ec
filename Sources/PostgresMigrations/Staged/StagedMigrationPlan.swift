import Logging
import PostgresClient
import PostgresData

/// The versions of an app's model and the stages between them, applied at start-up by the
/// embedded ``Migrator`` under its advisory lock and recorded in its history as SQL files
/// are: a database at any version (or empty) reaches the last one, and a run that dies
/// resumes where it stopped.
///
/// ```swift
/// let plan = try StagedMigrationPlan(stages: [
///     .custom(from: v1, to: v2) { context in … },
///     .lightweight(from: v2, to: v3),
/// ])
/// let migrator = try Migrator(configuration: configuration, plan: plan)
/// try await migrator.up()
/// ```
///
/// Each stage becomes up to five migrations (planned by the internal `StagePlan`): versions `<stage>1`
/// expand, `<stage>2` indexes, `<stage>3` the custom stage's code, `<stage>4` validate,
/// `<stage>5` contract (`0011`…`0015` for the first stage); version `0001` creates the
/// first version's schema, or is recorded as done when its tables exist already. Their
/// history lives in its own table (``defaultHistoryTable``) beside the SQL files'.
///
/// Core Data equivalent: `NSStagedMigrationManager` (SwiftData: a `SchemaMigrationPlan`).
public struct StagedMigrationPlan: Sendable {
    /// The stages, oldest first.
    public let stages: [MigrationStage]

    /// The history table of staged migrations, unless the options name another.
    public static let defaultHistoryTable = "postgres_data_model_stages"

    /// A plan of `stages`, each starting at the version the previous one ends at.
    public init(stages: [MigrationStage]) throws(MigrationError) {
        guard !stages.isEmpty else {
            throw .invalidFile(file: "<model stages>", line: nil, message: "a staged migration plan needs at least one stage")
        }
        for (previous, next) in zip(stages, stages.dropFirst()) where previous.to.identifier != next.from.identifier {
            throw .invalidFile(file: "<model stages>", line: nil,
                               message: "stage \(next.from.identifier) → \(next.to.identifier) does not start where the one before ends (\(previous.to.identifier))")
        }
        self.stages = stages
    }

    /// The version the plan ends at: the app's current model.
    public var currentVersion: ModelVersion { stages[stages.count - 1].to }

    /// The migrations the stages become, against the database at `configuration` (custom
    /// stages open a container there).
    func migrations(configuration: Configuration) throws(MigrationError) -> [Migration] {
        let first = stages[0].from
        var migrations = [try Self.migration(version: 1, name: "\(first.identifier)_create", statements: [],
                                             creating: first.model.schemaDescription, transactional: true)]
        for (offset, stage) in stages.enumerated() {
            let base = (offset + 1) * 10
            let plan = StagePlan(from: stage.from, to: stage.to)
            let name = "\(stage.from.identifier)_to_\(stage.to.identifier)"
            if !plan.expand.isEmpty {
                migrations.append(try Self.migration(version: base + 1, name: "\(name)_expand", statements: plan.expand, transactional: true))
            }
            if !plan.indexes.isEmpty {
                migrations.append(try Self.migration(version: base + 2, name: "\(name)_indexes", statements: plan.indexes, transactional: false))
            }
            if case .custom(_, let to, let migrate) = stage {
                var custom = try Self.migration(version: base + 3, name: "\(name)_custom", statements: [], transactional: true)
                custom.action = { try await Self.run(migrate, model: to.model, configuration: configuration) }
                migrations.append(custom)
            }
            if !plan.validate.isEmpty {
                migrations.append(try Self.migration(version: base + 4, name: "\(name)_validate", statements: plan.validate, transactional: false))
            }
            if !plan.contract.isEmpty {
                migrations.append(try Self.migration(version: base + 5, name: "\(name)_contract", statements: plan.contract, transactional: false))
            }
        }
        return migrations
    }

    /// A generated migration, as if read from `<version>_<name>.sql`.
    private static func migration(version: Int, name: String, statements: [String], creating schema: SchemaDescription? = nil,
                                  transactional: Bool) throws(MigrationError) -> Migration {
        let digits = String(version)
        let fileName = String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + safeName(name) + ".sql"
        var text = transactional ? "" : "-- migrate:no-transaction\n"
        text += "-- migrate:up\n"
        if let schema { text += SchemaDiff.dump(schema) }
        text += statements.map { $0 + ";\n" }.joined()
        if statements.isEmpty && schema == nil { text += "-- the stage's Swift code\n" }
        return try Migration(fileName: fileName, contents: text)
    }

    /// `name` with what a file name cannot hold replaced.
    private static func safeName(_ name: String) -> String {
        String(name.map { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." || $0 == "-" ? $0 : "_" })
    }

    /// Runs a custom stage's code with a context over `model`, on a container of its own.
    private static func run(_ migrate: @Sendable (ManagedObjectContext) async throws -> Void, model: ManagedObjectModel,
                            configuration: Configuration) async throws {
        let container = PersistentContainer(name: "Migration", model: model)
        var options = PersistentStoreCoordinator.StoreOptions(maximumConnections: 2)
        options.allowsPendingNotNull = true
        try await container.loadPersistentStores(configuration: configuration, options: options)
        let context = container.newBackgroundContext()
        context.name = "staged migration"
        do {
            try await context.perform { try await migrate(context) }
        } catch {
            await container.persistentStoreCoordinator.close()
            throw error
        }
        await container.persistentStoreCoordinator.close()
    }
}

extension Migrator {
    /// A migrator for a staged migration plan: its migrations are the plan's stages (see
    /// ``StagedMigrationPlan``), its history table ``StagedMigrationPlan/defaultHistoryTable``
    /// unless `options` name another. Call ``up(to:)`` at start-up, before loading the store
    /// with the plan's ``StagedMigrationPlan/currentVersion``.
    public init(configuration: Configuration, plan: StagedMigrationPlan,
                            options: MigratorOptions = MigratorOptions()) throws {
        var options = options
        if options.historyTable == MigratorOptions().historyTable { options.historyTable = StagedMigrationPlan.defaultHistoryTable }
        let directory = try MigrationDirectory(path: "<model stages>", migrations: try plan.migrations(configuration: configuration))
        self.init(configuration: configuration, directory: directory, options: options)
    }
}

extension StagedMigrationPlan {
    /// Brings the database at `configuration` to ``currentVersion`` and returns the
    /// migrations applied: what an app calls at start-up. A database without history whose
    /// first version's tables exist already (made by `createSchemaIfMissing`, say) is taken
    /// as that version (a baseline at `0001`) instead of created again.
    @discardableResult
    public func migrate(configuration: Configuration, options: MigratorOptions = MigratorOptions()) async throws -> [Migration] {
        let migrator = try Migrator(configuration: configuration, plan: self, options: options)
        if try await migrator.status().allSatisfy({ $0.applied == nil }), let table = stages[0].from.model.entities.first?.tableName {
            let connection = try await Connection.connect(configuration)
            let exists: Bool
            do {
                exists = try await connection.query("SELECT to_regclass(quote_ident($1)) IS NOT NULL", table)[0].decode(Bool.self, at: 0)
            } catch {
                await connection.close()
                throw error
            }
            await connection.close()
            if exists, let first = MigrationVersion("0001") { try await migrator.baseline(first) }
        }
        return try await migrator.up()
    }
}
