import Foundation

/// A `Codable` value stored as `jsonb` (and read from `json` or `jsonb`).
///
/// ```swift
/// struct Settings: Codable, Sendable { var theme: String }
/// try await connection.query("INSERT INTO users(settings) VALUES ($1)", PostgresJSON(Settings(theme: "dark")))
/// let settings = try row.decode(PostgresJSON<Settings>.self, at: 0).value
/// ```
public struct PostgresJSON<Value: Codable & Sendable>: Sendable, PostgresArrayElement, PostgresDecodable {
    public var value: Value

    public init(_ value: Value) { self.value = value }

    public static var postgresType: PostgresType { .jsonb }
    public static var postgresArrayType: PostgresType { .jsonbArray }

    public func encode(into buffer: inout PostgresBuffer) throws {
        buffer.writeInteger(UInt8(1))  // jsonb's binary format version
        do {
            buffer.writeBytes(try JSONEncoder().encode(value))
        } catch {
            throw PostgresError(.encoding, message: "cannot encode \(Value.self) as JSON: \(error)")
        }
    }

    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> PostgresJSON<Value> {
        var bytes = cell.bytes
        switch (cell.format, cell.type) {
        case (.binary, .jsonb):
            guard bytes.first == 1 else { throw .malformed("unknown jsonb version") }
            bytes = UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
        case (_, .json), (.text, .jsonb), (_, .text), (_, .varchar):
            break
        default:
            throw .typeMismatch
        }
        do {
            return PostgresJSON(try JSONDecoder().decode(Value.self, from: Data(bytes)))
        } catch {
            throw .malformed("JSON is not a valid \(Value.self): \(error)")
        }
    }
}

extension PostgresJSON: Equatable where Value: Equatable {}
extension PostgresJSON: Hashable where Value: Hashable {}
