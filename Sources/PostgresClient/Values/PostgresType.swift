/// A PostgreSQL data type, identified by its OID (`pg_type.oid`).
///
/// Constants cover the built-in types this client encodes and decodes; any other OID
/// can be wrapped with `PostgresType(oid:)`.
public struct PostgresType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(oid: UInt32) { self.rawValue = oid }

    public var oid: UInt32 { rawValue }

    public static let unspecified = PostgresType(oid: 0)
    public static let bool = PostgresType(oid: 16)
    public static let bytea = PostgresType(oid: 17)
    public static let char = PostgresType(oid: 18)
    public static let name = PostgresType(oid: 19)
    public static let int8 = PostgresType(oid: 20)
    public static let int2 = PostgresType(oid: 21)
    public static let int4 = PostgresType(oid: 23)
    public static let text = PostgresType(oid: 25)
    public static let oidType = PostgresType(oid: 26)
    public static let xid = PostgresType(oid: 28)
    public static let json = PostgresType(oid: 114)
    public static let float4 = PostgresType(oid: 700)
    public static let float8 = PostgresType(oid: 701)
    public static let unknown = PostgresType(oid: 705)
    public static let bpchar = PostgresType(oid: 1042)
    public static let varchar = PostgresType(oid: 1043)
    public static let date = PostgresType(oid: 1082)
    public static let time = PostgresType(oid: 1083)
    public static let timestamp = PostgresType(oid: 1114)
    public static let timestamptz = PostgresType(oid: 1184)
    public static let interval = PostgresType(oid: 1186)
    public static let numeric = PostgresType(oid: 1700)
    public static let uuid = PostgresType(oid: 2950)
    public static let jsonb = PostgresType(oid: 3802)

    public static let boolArray = PostgresType(oid: 1000)
    public static let byteaArray = PostgresType(oid: 1001)
    public static let int2Array = PostgresType(oid: 1005)
    public static let int4Array = PostgresType(oid: 1007)
    public static let textArray = PostgresType(oid: 1009)
    public static let varcharArray = PostgresType(oid: 1015)
    public static let xidArray = PostgresType(oid: 1011)
    public static let int8Array = PostgresType(oid: 1016)
    public static let float4Array = PostgresType(oid: 1021)
    public static let float8Array = PostgresType(oid: 1022)
    public static let timestampArray = PostgresType(oid: 1115)
    public static let dateArray = PostgresType(oid: 1182)
    public static let timestamptzArray = PostgresType(oid: 1185)
    public static let numericArray = PostgresType(oid: 1231)
    public static let uuidArray = PostgresType(oid: 2951)
    public static let jsonArray = PostgresType(oid: 199)
    public static let jsonbArray = PostgresType(oid: 3807)

    private static let names: [UInt32: String] = [
        0: "unspecified", 16: "boolean", 17: "bytea", 18: "\"char\"", 19: "name", 20: "bigint",
        21: "smallint", 23: "integer", 25: "text", 26: "oid", 114: "json", 700: "real",
        701: "double precision", 705: "unknown", 1042: "character", 1043: "character varying",
        1082: "date", 1083: "time", 1114: "timestamp", 1184: "timestamptz", 1186: "interval",
        1700: "numeric", 2950: "uuid", 3802: "jsonb", 1000: "boolean[]", 1001: "bytea[]",
        1005: "smallint[]", 1007: "integer[]", 1009: "text[]", 1015: "character varying[]",
        1016: "bigint[]", 1021: "real[]", 1022: "double precision[]", 1115: "timestamp[]",
        1182: "date[]", 1185: "timestamptz[]", 1231: "numeric[]", 2951: "uuid[]", 199: "json[]",
        3807: "jsonb[]",
    ]

    /// The SQL name of the type (`integer`, `timestamptz`, `text[]`), or `oid N` for others.
    public var name: String { Self.names[rawValue] ?? "oid \(rawValue)" }
    public var description: String { name }

    /// True for the types whose binary and text forms are both plain UTF-8 text.
    var isTextual: Bool {
        self == .text || self == .varchar || self == .bpchar || self == .name || self == .unknown
    }
}
