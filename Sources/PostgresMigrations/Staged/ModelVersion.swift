import PostgresData

/// One version of an app's model, with what it renamed from the version before: a step of a
/// ``StagedMigrationPlan``.
///
/// ```swift
/// let v2 = ModelVersion("2", model: ManagedObjectModel(Person.self),
///                       renamedProperties: ["Person": ["fullName": "name"]])
/// ```
///
/// Core Data equivalent: a model version in an `.xcdatamodeld` with renaming identifiers on
/// its entities and properties (SwiftData: a `VersionedSchema` with `@Attribute(originalName:)`).
/// Renames are `ALTER TABLE … RENAME`, never a drop and an add: the data stays.
public struct ModelVersion: Sendable {
    /// Names the version in the migration history (`1`, `2.0`, `2024-06`).
    public var identifier: String
    /// The version's model.
    public var model: ManagedObjectModel
    /// Entities renamed since the previous version: new name → previous name.
    public var renamedEntities: [String: String]
    /// Properties renamed since the previous version, by the entity's (new) name: new
    /// property name → previous name.
    public var renamedProperties: [String: [String: String]]

    /// A version of `model` named `identifier`, with its renames since the previous version.
    public init(_ identifier: String, model: ManagedObjectModel, renamedEntities: [String: String] = [:],
                renamedProperties: [String: [String: String]] = [:]) {
        self.identifier = identifier
        self.model = model
        self.renamedEntities = renamedEntities
        self.renamedProperties = renamedProperties
    }
}

/// One step from a model version to the next.
///
/// Core Data equivalent: `NSMigrationStage` — `NSLightweightMigrationStage` and
/// `NSCustomMigrationStage` (SwiftData: `MigrationStage.lightweight` and `.custom`).
public enum MigrationStage: Sendable {
    /// The schema change derived from the two versions, in the safe order (see
    /// ``StagedMigrationPlan``); no code runs.
    case lightweight(from: ModelVersion, to: ModelVersion)
    /// The same schema change, with `migrate` run between its expanding and its contracting
    /// half: new tables and columns exist (required ones still allow NULL), old ones are
    /// still there, renames are done. `migrate` gets a context over the target version's
    /// model; it may also run SQL of its own through the context's coordinator's pool. Write
    /// it so that running it twice is harmless (`WHERE first IS NULL`): a run that dies after
    /// it and before its record runs it again.
    case custom(from: ModelVersion, to: ModelVersion, migrate: @Sendable (ManagedObjectContext) async throws -> Void)

    var from: ModelVersion {
        switch self {
        case .lightweight(let from, _), .custom(let from, _, _): from
        }
    }

    var to: ModelVersion {
        switch self {
        case .lightweight(_, let to), .custom(_, let to, _): to
        }
    }
}
