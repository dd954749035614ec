import PostgresClient

/// The errors of PostgresData: each says what was wrong, where, and what to do.
public enum PostgresDataError: Error, Sendable, CustomStringConvertible {
    /// Objects break the model's rules; nothing was saved. Every failure of the save is listed.
    case validation([ValidationFailure])
    /// Rows changed underneath the context and the merge policy is `error`; nothing was saved.
    case mergeConflict([MergeConflict])
    /// Objects of the save hold a unique key that another object of the save or an existing
    /// row holds, and the merge policy is `error` (or the conflict is among the save's own
    /// objects); nothing was saved and the context keeps its changes. Core Data equivalent:
    /// `NSManagedObjectConstraintMergeError` with its `NSConstraintConflict`s.
    case constraintConflict([ConstraintConflict])
    /// The database refused the save because of a constraint of the model; nothing was saved.
    case constraintViolation(constraint: SchemaConstraint?, name: String, underlying: PostgresError)
    /// Two objects of different contexts were related.
    case crossContextRelationship(key: String, object: ManagedObjectID, objectContext: String,
                                  other: ManagedObjectID, otherContext: String)
    /// A key that the entity does not have.
    case unknownKey(String, entity: String, known: [String])
    /// A value of the wrong type for a property.
    case typeMismatch(key: String, entity: String, expected: AttributeType?, actual: String)
    /// The object has no row in the database (``ManagedObjectContext/existingObject(with:)-5tqle``).
    case objectNotFound(ManagedObjectID)
    /// The object is not in a context.
    case noContext(ManagedObjectID)
    /// The model has problems (missing inverses, unknown destinations).
    case invalidModel([String])
    /// The database schema does not match the model; each difference is listed.
    case schemaMismatch([String])
    /// No store is loaded, or the coordinator was closed.
    case storeNotLoaded
    /// A URI that does not name an object of this model.
    case invalidURI(String)
    /// A fetch request or other argument that cannot be used as given.
    case invalidRequest(String)
    /// A read-only context was asked to save or to run a batch request; nothing was
    /// written and the context keeps its changes. See ``ManagedObjectContext/isReadOnly``.
    case readOnlyContext(String)
    /// The database or the connection failed (SQLSTATE, message, detail and hint inside).
    case database(PostgresError)
    /// The connection was lost while `COMMIT` ran: the save may or may not have landed. The
    /// context keeps its changes; it is never retried by
    /// ``ManagedObjectContext/perform(retryingUpTo:_:)``. Read the database to know, or
    /// make the unit of work idempotent before retrying it.
    case commitOutcomeUnknown(PostgresError)

    /// The store is shutting down (its service received a graceful shutdown): units of work
    /// already under way finish, new ones are refused. Retry the request on another instance.
    case shuttingDown
    /// The snapshot a context is pinned to (``ManagedObjectContext/setQueryGenerationFrom(_:)``)
    /// can no longer be read: its connection was lost, or the store closed. Nothing changed;
    /// pin the context again (`.current`) or unpin it (nil) to read.
    case queryGenerationEnded(String)

    /// True when running the same work again may succeed (a lost connection, a serialization
    /// failure, a deadlock).
    public var isRetryable: Bool {
        if case .database(let error) = self { return error.isRetryable }
        return false
    }

    /// The SQLSTATE of a database error.
    public var sqlState: String? {
        switch self {
        case .database(let error), .constraintViolation(_, _, let error), .commitOutcomeUnknown(let error): error.sqlState?.rawValue
        case .constraintConflict(let conflicts): conflicts.contains { $0.databaseObjectID != nil } ? "23505" : nil
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .validation(let failures):
            return "validation failed for \(failures.count) value\(failures.count == 1 ? "" : "s"); nothing was saved:\n" +
                failures.map { "  - \($0)" }.joined(separator: "\n")
        case .mergeConflict(let conflicts):
            return "merge conflict on \(conflicts.count) object\(conflicts.count == 1 ? "" : "s") (merge policy `error`); nothing was saved. Refresh the objects or choose another merge policy:\n" +
                conflicts.map { "  - \($0)" }.joined(separator: "\n")
        case .constraintConflict(let conflicts):
            let state = sqlState.map { " (SQLSTATE \($0))" } ?? ""
            return "uniqueness conflict\(state) on \(conflicts.count) key value\(conflicts.count == 1 ? "" : "s"); nothing was saved and the context keeps its changes. Fetch the existing object and change it instead, or save with a merge policy that resolves conflicts (mergeByPropertyObjectTrump, mergeByPropertyStoreTrump):\n" +
                conflicts.map { "  - \($0)" }.joined(separator: "\n")
        case .constraintViolation(let constraint, let name, let underlying):
            let rule = constraint.map { "\($0.entityName).\($0.keys.joined(separator: ", ")): \($0.rule)" } ?? "constraint \"\(name)\""
            return "the database refused the save: \(rule) (constraint \(name), SQLSTATE \(underlying.sqlState?.rawValue ?? "?")): \(underlying.message)\(underlying.detail.map { " — \($0)" } ?? ""); nothing was saved and the context keeps its changes"
        case .crossContextRelationship(let key, let object, let objectContext, let other, let otherContext):
            return "illegal relationship \(object).\(key) → \(other): \(object) lives in context \(objectContext) and \(other) in context \(otherContext). Pass the object ID and use otherContext.object(with:) instead"
        case .unknownKey(let key, let entity, let known):
            return "\(entity) has no property \"\(key)\"; its properties are \(known.joined(separator: ", "))"
        case .typeMismatch(let key, let entity, let expected, let actual):
            return "\(entity).\(key) cannot hold a value of type \(actual)\(expected.map { "; it is a \($0) attribute" } ?? "")"
        case .objectNotFound(let id):
            return "\(id) has no row in the database (it was deleted, or never saved)"
        case .noContext(let id):
            return "\(id) is not in a context; insert it first"
        case .invalidModel(let problems):
            return "the model is invalid:\n" + problems.map { "  - \($0)" }.joined(separator: "\n")
        case .schemaMismatch(let differences):
            return "the database schema does not match the model (apply the migrations, or load with createSchemaIfMissing for development):\n" +
                differences.map { "  - \($0)" }.joined(separator: "\n")
        case .storeNotLoaded:
            return "no persistent store is loaded; call loadPersistentStores() first"
        case .invalidURI(let uri):
            return "\(uri) is not the URI of an object of this model (expected x-postgresdata://Entity/p<key>)"
        case .invalidRequest(let reason), .readOnlyContext(let reason), .queryGenerationEnded(let reason):
            return reason
        case .database(let error):
            return "\(error)"
        case .commitOutcomeUnknown(let error):
            return "the outcome of the save is unknown: \(error.message). The context keeps its changes; check the database before saving them again"
        case .shuttingDown:
            return "the store is shutting down: units of work under way finish, new ones are refused; retry the request on another instance"
        }
    }
}
