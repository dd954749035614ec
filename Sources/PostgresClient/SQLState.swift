/// A five-character SQLSTATE error code, with names for the codes applications test for.
public struct SQLState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ code: String) { self.rawValue = code }

    public var code: String { rawValue }
    public var description: String { rawValue }
    /// The two-character class (`23` for integrity constraint violations).
    public var errorClass: String { String(rawValue.prefix(2)) }

    public static let uniqueViolation = SQLState("23505")
    public static let foreignKeyViolation = SQLState("23503")
    public static let notNullViolation = SQLState("23502")
    public static let checkViolation = SQLState("23514")
    public static let exclusionViolation = SQLState("23P01")
    public static let syntaxError = SQLState("42601")
    public static let undefinedTable = SQLState("42P01")
    public static let undefinedColumn = SQLState("42703")
    public static let queryCanceled = SQLState("57014")
    public static let adminShutdown = SQLState("57P01")
    public static let crashShutdown = SQLState("57P02")
    public static let cannotConnectNow = SQLState("57P03")
    public static let serializationFailure = SQLState("40001")
    public static let deadlockDetected = SQLState("40P01")
    public static let lockNotAvailable = SQLState("55P03")
    public static let inFailedTransaction = SQLState("25P02")
    public static let readOnlyTransaction = SQLState("25006")
    public static let invalidPassword = SQLState("28P01")
    public static let invalidAuthorization = SQLState("28000")
    public static let invalidCatalogName = SQLState("3D000")
    public static let connectionFailure = SQLState("08006")
    public static let diskFull = SQLState("53100")
    public static let outOfMemory = SQLState("53200")
    public static let tooManyConnections = SQLState("53300")
}
