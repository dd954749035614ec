import Foundation
import PostgresClient
import Testing

struct Profile: Codable, Equatable, Sendable {
    var name: String
    var tags: [String]
    var score: Double?
}

@Suite("Values round-trip through the server in binary and text")
struct ValueRoundTripTests {
    /// Sends `value` as a parameter, checks the server sees `literal`, and reads it back both ways.
    func check<Value: PostgresCodable & Equatable>(
        _ value: Value, as sqlType: String, literal: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try await withConnection { connection async throws in
            let binary = try await connection.query("SELECT $1::\(sqlType)", value)
            #expect(try binary[0].decode(Value.self, at: 0) == value, sourceLocation: sourceLocation)
            let text = try await connection.query("SELECT $1::\(sqlType)", bindings: PostgresBindings(value),
                                                   options: QueryOptions(resultFormat: .text))
            if sqlType.hasSuffix("[]") == false {
                #expect(try text[0].decode(Value.self, at: 0) == value, "text format", sourceLocation: sourceLocation)
            }
            if let literal {
                let same = try await connection.query("SELECT $1::\(sqlType) IS NOT DISTINCT FROM (\(literal))::\(sqlType)", value)
                #expect(try same[0].decode(Bool.self, at: 0), "the server sees \(literal)", sourceLocation: sourceLocation)
            }
            let null = try await connection.query("SELECT $1::\(sqlType)", Value?.none)
            #expect(try null[0].decode(Value?.self, at: 0) == nil, "NULL", sourceLocation: sourceLocation)
            #expect(null[0].isNull(at: 0), sourceLocation: sourceLocation)
        }
    }

    @Test func booleans() async throws {
        try await check(true, as: "boolean", literal: "true")
        try await check(false, as: "boolean", literal: "false")
    }

    @Test func integersAtTheirExtremes() async throws {
        for value in [Int16.min, -1, 0, 1, .max] { try await check(value, as: "smallint", literal: "\(value)") }
        for value in [Int32.min, -1, 0, 1, .max] { try await check(value, as: "integer", literal: "\(value)") }
        for value in [Int64.min, -1, 0, 1, .max] { try await check(value, as: "bigint", literal: "\(value)") }
        for value in [Int.min, 0, .max] { try await check(value, as: "bigint", literal: "\(value)") }
    }

    /// No server: the bytes of each width, negative numbers in two's complement.
    @Test func integersAreWrittenMostSignificantByteFirst() {
        var buffer = PostgresBuffer()
        buffer.writeInteger(Int8(-2))
        buffer.writeInteger(UInt16(0x0102))
        buffer.writeInteger(Int32(-2))
        buffer.writeInteger(Int64(0x0102_0304_0506_0708))
        buffer.writeInteger(Int64.min)
        #expect(buffer.bytes == [0xFE, 0x01, 0x02, 0xFF, 0xFF, 0xFF, 0xFE, 1, 2, 3, 4, 5, 6, 7, 8, 0x80, 0, 0, 0, 0, 0, 0, 0])
    }

    @Test func floatingPointIncludingInfinities() async throws {
        for value in [Float(0), -1.5, .greatestFiniteMagnitude, .leastNonzeroMagnitude, .infinity, -.infinity] {
            try await check(value, as: "real")
        }
        for value in [0.0, -2.25, .greatestFiniteMagnitude, .leastNormalMagnitude, .infinity, -.infinity, .pi] {
            try await check(value, as: "double precision")
        }
        try await check(-2.25, as: "double precision", literal: "'-2.25'")
        let nan = try await withConnection { try await $0.query("SELECT $1::float8", Double.nan)[0].decode(Double.self, at: 0) }
        #expect(nan.isNaN)
    }

    @Test(arguments: ["0", "1", "-1.5", "0.0001", "123456789012345678901234.5678", "-0.00000000000000000001",
                      "99999999999999999999999999999999999999", "10000", "1.10", "12345.6789"])
    func numerics(_ text: String) async throws {
        let value = try #require(Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")))
        try await check(value, as: "numeric", literal: "'\(text)'")
    }

    @Test func numericBeyondDecimalPrecisionIsAnError() async throws {
        let error = await capturePostgresError {
            _ = try await withConnection {
                try await $0.query("SELECT 1234567890123456789012345678901234567890.5::numeric")[0].decode(Decimal.self, at: 0)
            }
        }
        #expect(error?.kind == .decoding)
        #expect(error?.message.contains("38 significant digits") == true)
    }

    @Test func numericNaN() async throws {
        let value = try await withConnection { try await $0.query("SELECT $1::numeric", Decimal.nan)[0].decode(Decimal.self, at: 0) }
        #expect(value.isNaN)
    }

    @Test(arguments: ["", "plain ASCII", "héllo wörld", "日本語のテキスト", "emoji 👩‍👩‍👧‍👦🚀", "مرحبا", "tab\tnew\nline", "quote ' and \" and \\"])
    func text(_ value: String) async throws {
        try await check(value, as: "text")
        try await check(value, as: "varchar")
        let length = try await withConnection { try await $0.query("SELECT char_length($1)", value)[0].decode(Int32.self, at: 0) }
        #expect(Int(length) == value.unicodeScalars.count)
    }

    @Test func datesAndTimestamps() async throws {
        let now = Date()
        try await withConnection { connection async throws in
            for format in [PostgresFormat.binary, .text] {
                let row = try await connection.query("SELECT $1::timestamptz, abs(extract(epoch FROM $1::timestamptz - to_timestamp($2))) < 0.000002",
                                                     bindings: PostgresBindings(now, (now.timeIntervalSince1970 * 1e6).rounded() / 1e6),
                                                     options: QueryOptions(resultFormat: format))[0]
                #expect(abs(try row.decode(Date.self, at: 0).timeIntervalSince(now)) <= 0.000_001, "\(format)")
                #expect(try row.decode(Bool.self, at: 1), "the server sees the same instant")
            }
        }
        try await check(Date(timeIntervalSince1970: 0), as: "timestamptz", literal: "'1970-01-01 00:00:00+00'")
        try await check(Date(timeIntervalSince1970: -2_208_988_800), as: "timestamptz", literal: "'1900-01-01 00:00:00+00'")
        try await check(Date(timeIntervalSince1970: 946_684_800.5), as: "timestamptz", literal: "'2000-01-01 00:00:00.5+00'")
        try await check(Date.distantFuture, as: "timestamptz", literal: "'infinity'")
        try await check(Date.distantPast, as: "timestamptz", literal: "'-infinity'")
        try await check(PostgresDate(Date(timeIntervalSince1970: 1_700_000_000)), as: "date", literal: "'2023-11-14'")
        try await check(PostgresDate(daysSince2000: -1), as: "date", literal: "'1999-12-31'")
        let naive = try await withConnection {
            try await $0.query("SELECT '2024-02-29 12:34:56.789'::timestamp, '2024-02-29'::date")[0].decode((Date, Date).self)
        }
        #expect(abs(naive.0.timeIntervalSince1970 - 1_709_210_096.789) < 0.000_001)
        #expect(naive.1.timeIntervalSince1970 == 1_709_164_800)
    }

    @Test func textTimestampsWithOffsets() async throws {
        try await withConnection { connection async throws in
            try await connection.query("SET TIME ZONE 'Asia/Kolkata'")
            let text = try await connection.query("SELECT '2024-01-02 03:04:05.25+00'::timestamptz",
                                                  bindings: PostgresBindings(), options: QueryOptions(resultFormat: .text))
            #expect(try text[0].decode(String.self, at: 0) == "2024-01-02 08:34:05.25+05:30")
            #expect(try text[0].decode(Date.self, at: 0).timeIntervalSince1970 == 1_704_164_645.25)
        }
    }

    @Test func uuids() async throws {
        let uuid = UUID()
        try await check(uuid, as: "uuid", literal: "'\(uuid.uuidString)'")
    }

    @Test func binaryData() async throws {
        try await check(Data(), as: "bytea", literal: "''")
        try await check(Data((0...255).map(UInt8.init)), as: "bytea")
        try await check(Data([0, 0xde, 0xad, 0xbe, 0xef]), as: "bytea", literal: "'\\x00deadbeef'")
    }

    @Test func tenMebibytesOfBytea() async throws {
        var data = Data(count: 10 * 1024 * 1024)
        data.withUnsafeMutableBytes { bytes in
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            for index in stride(from: 0, to: bytes.count, by: 8) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes.storeBytes(of: state, toByteOffset: index, as: UInt64.self)
            }
        }
        try await withConnection { connection async throws in
            let result = try await connection.query("SELECT $1::bytea, length($1::bytea), md5($1::bytea)", data)
            let (back, length, digest) = try result[0].decode((Data, Int32, String).self)
            #expect(back == data)
            #expect(length == 10 * 1024 * 1024)
            #expect(digest.count == 32)
        }
    }

    @Test func codableAsJSONB() async throws {
        let profile = Profile(name: "Zoë", tags: ["a", "b"], score: nil)
        try await check(PostgresJSON(profile), as: "jsonb")
        try await withConnection { connection async throws in
            let result = try await connection.query("SELECT $1::jsonb ->> 'name', $1::jsonb::json", PostgresJSON(profile))
            #expect(try result[0].decode(String.self, at: 0) == "Zoë")
            #expect(try result[0].decode(PostgresJSON<Profile>.self, at: 1).value == profile)
        }
    }

    @Test func oneDimensionalArrays() async throws {
        try await check([Int32](), as: "integer[]", literal: "'{}'")
        try await check([Int32.min, 0, .max], as: "integer[]", literal: "ARRAY[-2147483648, 0, 2147483647]")
        try await check([Int16?](arrayLiteral: 1, nil, 3), as: "smallint[]", literal: "ARRAY[1, NULL, 3]")
        try await check([Int64(1) << 40], as: "bigint[]")
        try await check(["a", "é", "", "NULL"], as: "text[]", literal: "ARRAY['a', 'é', '', 'NULL']")
        try await check([String?](arrayLiteral: nil, "x"), as: "text[]", literal: "ARRAY[NULL, 'x']")
        try await check([true, false], as: "boolean[]")
        try await check([1.5, -.infinity], as: "double precision[]")
        try await check([Float(2.5)], as: "real[]")
        try await check([Decimal(string: "1.25")!, Decimal(-3)], as: "numeric[]", literal: "ARRAY[1.25, -3]")
        try await check([UUID(), UUID()], as: "uuid[]")
        try await check([Data([1, 2]), Data()], as: "bytea[]")
        try await check([Date(timeIntervalSince1970: 0), .distantFuture], as: "timestamptz[]")
        try await check([PostgresDate(daysSince2000: 0)], as: "date[]", literal: "ARRAY['2000-01-01'::date]")
        try await check([PostgresJSON(Profile(name: "x", tags: [], score: 1))], as: "jsonb[]")
        let error = await capturePostgresError {
            _ = try await withConnection { try await $0.query("SELECT ARRAY[[1,2],[3,4]]")[0].decode([Int32].self, at: 0) }
        }
        #expect(error?.kind == .decoding)
        #expect(error?.message.contains("2-dimensional") == true)
    }

    @Test func integerWideningAndCheckedNarrowing() async throws {
        try await withConnection { connection async throws in
            let row = try await connection.query("SELECT 7::smallint, 40000::integer, 5000000000::bigint")[0]
            #expect(try row.decode(Int64.self, at: 0) == 7)
            #expect(try row.decode(Int.self, at: 1) == 40000)
            #expect(try row.decode(Double.self, at: 2) == 5_000_000_000)
            let error = await capturePostgresError { _ = try row.decode(Int16.self, at: 1) }
            #expect(error?.kind == .decoding)
            #expect(error?.message.contains("does not fit in Int16") == true)
        }
    }
}
