import Foundation
import PostgresClient

/// The type of an attribute's values, and the PostgreSQL column type it maps to.
///
/// Core Data equivalent: `NSAttributeDescription.AttributeType` (`NSAttributeType`).
public enum AttributeType: String, Sendable, Hashable, CaseIterable {
    /// `Int16`, stored as `smallint`.
    case integer16
    /// `Int32`, stored as `integer`.
    case integer32
    /// `Int64` or `Int`, stored as `bigint`.
    case integer64
    /// `Double`, stored as `double precision`.
    case double
    /// `Float`, stored as `real`.
    case float
    /// `Decimal`, stored as `numeric`.
    case decimal
    /// `String`, stored as `text`.
    case string
    /// `Bool`, stored as `boolean`.
    case boolean
    /// `Date`, stored as `timestamptz`.
    case date
    /// `Data`, stored as `bytea`.
    case binaryData
    /// `UUID`, stored as `uuid`.
    case uuid
    /// `URL`, stored as `text` (its absolute string).
    case uri
    /// Any `Codable` value, stored as `jsonb` (Core Data's transformable attributes).
    case codable

    /// The column type in DDL.
    public var sqlType: String {
        switch self {
        case .integer16: "smallint"
        case .integer32: "integer"
        case .integer64: "bigint"
        case .double: "double precision"
        case .float: "real"
        case .decimal: "numeric"
        case .string, .uri: "text"
        case .boolean: "boolean"
        case .date: "timestamp with time zone"
        case .binaryData: "bytea"
        case .uuid: "uuid"
        case .codable: "jsonb"
        }
    }

    /// The PostgreSQL type of one value (bind parameters, array elements).
    var postgresType: PostgresType {
        switch self {
        case .integer16: .int2
        case .integer32: .int4
        case .integer64: .int8
        case .double: .float8
        case .float: .float4
        case .decimal: .numeric
        case .string, .uri: .text
        case .boolean: .bool
        case .date: .timestamptz
        case .binaryData: .bytea
        case .uuid: .uuid
        case .codable: .jsonb
        }
    }

    /// The array type whose elements are of this type (`text[]` for strings).
    var postgresArrayType: PostgresType {
        switch self {
        case .integer16: .int2Array
        case .integer32: .int4Array
        case .integer64: .int8Array
        case .double: .float8Array
        case .float: .float4Array
        case .decimal: .numericArray
        case .string, .uri: .textArray
        case .boolean: .boolArray
        case .date: .timestamptzArray
        case .binaryData: .byteaArray
        case .uuid: .uuidArray
        case .codable: .jsonbArray
        }
    }

    var isNumeric: Bool {
        switch self {
        case .integer16, .integer32, .integer64, .double, .float, .decimal: true
        default: false
        }
    }

    var isInteger: Bool { self == .integer16 || self == .integer32 || self == .integer64 }
}

extension AttributeType {
    /// The value a required attribute of this type reads when there is nothing to read;
    /// NULL for `codable`, whose type has no zero the store knows.
    var zeroValue: AttributeValue {
        switch self {
        case .integer16, .integer32, .integer64: .integer(0)
        case .double: .double(0)
        case .float: .float(0)
        case .decimal: .decimal(0)
        case .string: .string("")
        case .boolean: .boolean(false)
        case .date: .date(Date(timeIntervalSinceReferenceDate: 0))
        case .binaryData: .data(Data())
        case .uuid: .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        case .uri: URL(string: "about:blank").map { .url($0) } ?? .null
        case .codable: .null
        }
    }
}
