import Foundation

/// `Date` travels as `timestamptz` (microseconds since 2000-01-01 UTC) and is read from
/// `timestamptz`, `timestamp` (taken as UTC) and `date` (midnight UTC) columns.
/// PostgreSQL's `infinity` and `-infinity` become `Date.distantFuture` and `Date.distantPast`.
extension Date: PostgresArrayElement, PostgresDecodable {
    public static var postgresType: PostgresType { .timestamptz }
    public static var postgresArrayType: PostgresType { .timestamptzArray }

    /// Seconds from 2001-01-01 (Foundation's reference date) back to 2000-01-01 (PostgreSQL's).
    static let postgresEpochOffset: Double = 31_622_400

    public func encode(into buffer: inout PostgresBuffer) throws {
        if self == .distantFuture { return buffer.writeInteger(Int64.max) }
        if self == .distantPast { return buffer.writeInteger(Int64.min) }
        let micros = ((timeIntervalSinceReferenceDate + Self.postgresEpochOffset) * 1_000_000).rounded()
        guard let value = Int64(exactly: micros) else {
            throw PostgresError(.encoding, message: "date \(self) is outside PostgreSQL's timestamp range")
        }
        buffer.writeInteger(value)
    }

    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> Date {
        switch (cell.format, cell.type) {
        case (.binary, .timestamptz), (.binary, .timestamp):
            guard cell.bytes.count == 8 else { throw .malformed("timestamp of \(cell.bytes.count) bytes") }
            let micros = cell.loadBigEndian(Int64.self)
            if micros == .max { return .distantFuture }
            if micros == .min { return .distantPast }
            return Date(timeIntervalSinceReferenceDate: Double(micros) / 1_000_000 - postgresEpochOffset)
        case (.binary, .date):
            guard cell.bytes.count == 4 else { throw .malformed("date of \(cell.bytes.count) bytes") }
            let days = cell.loadBigEndian(Int32.self)
            if days == .max { return .distantFuture }
            if days == .min { return .distantPast }
            return Date(timeIntervalSinceReferenceDate: Double(days) * 86_400 - postgresEpochOffset)
        case (.text, .timestamptz), (.text, .timestamp), (.text, .date):
            return try ISOTimestampParser.parse(cell.string)
        default:
            throw .typeMismatch
        }
    }
}

/// A calendar date without a time, for `date` columns and parameters.
public struct PostgresDate: Hashable, Sendable, PostgresArrayElement, PostgresDecodable {
    /// Days since 2000-01-01.
    public var daysSince2000: Int32

    public init(daysSince2000: Int32) { self.daysSince2000 = daysSince2000 }

    /// The UTC calendar day containing `date`.
    public init(_ date: Date) {
        let seconds = date.timeIntervalSinceReferenceDate + Date.postgresEpochOffset
        daysSince2000 = Int32((seconds / 86_400).rounded(.down))
    }

    /// Midnight UTC of this day.
    public var date: Date {
        Date(timeIntervalSinceReferenceDate: Double(daysSince2000) * 86_400 - Date.postgresEpochOffset)
    }

    public static var postgresType: PostgresType { .date }
    public static var postgresArrayType: PostgresType { .dateArray }
    public func encode(into buffer: inout PostgresBuffer) { buffer.writeInteger(daysSince2000) }
    public static func decode(from cell: PostgresCell) throws(PostgresDecodingError) -> PostgresDate {
        guard cell.type == .date else { throw .typeMismatch }
        if cell.format == .binary {
            guard cell.bytes.count == 4 else { throw .malformed("date of \(cell.bytes.count) bytes") }
            return PostgresDate(daysSince2000: cell.loadBigEndian(Int32.self))
        }
        return PostgresDate(try Date.decode(from: cell))
    }
}

/// Parses PostgreSQL's ISO output (`DateStyle = ISO`): `2024-05-06 07:08:09.123456+02`.
enum ISOTimestampParser {
    static func parse(_ text: String) throws(PostgresDecodingError) -> Date {
        if text == "infinity" { return .distantFuture }
        if text == "-infinity" { return .distantPast }
        var scanner = Substring(text)
        var isBC = false
        if scanner.hasSuffix(" BC") {
            isBC = true
            scanner = scanner.dropLast(3)
        }
        func number(_ count: Int) throws(PostgresDecodingError) -> Int {
            let digits = scanner.prefix(while: \.isNumber)
            guard digits.count >= count, let value = Int(digits) else {
                throw .malformed("timestamp text \"\(text)\"; set DateStyle to ISO")
            }
            scanner = scanner.dropFirst(digits.count)
            return value
        }
        func expect(_ character: Character) throws(PostgresDecodingError) {
            guard scanner.first == character else { throw .malformed("timestamp text \"\(text)\"; set DateStyle to ISO") }
            scanner = scanner.dropFirst()
        }
        var year = try number(4)
        if isBC { year = 1 - year }
        try expect("-")
        let month = try number(2)
        try expect("-")
        let day = try number(2)
        var seconds = 0.0
        var offset = 0
        if scanner.first == " " || scanner.first == "T" {
            scanner = scanner.dropFirst()
            let hour = try number(2)
            try expect(":")
            let minute = try number(2)
            try expect(":")
            let second = try number(2)
            seconds = Double(hour * 3600 + minute * 60 + second)
            if scanner.first == "." {
                scanner = scanner.dropFirst()
                let digits = scanner.prefix(while: \.isNumber)
                seconds += Double("0." + digits) ?? 0
                scanner = scanner.dropFirst(digits.count)
            }
            if let sign = scanner.first, sign == "+" || sign == "-" {
                scanner = scanner.dropFirst()
                var zone = try number(2) * 3600
                if scanner.first == ":" { scanner = scanner.dropFirst(); zone += try number(2) * 60 }
                if scanner.first == ":" { scanner = scanner.dropFirst(); zone += try number(2) }
                offset = sign == "+" ? zone : -zone
            }
        }
        guard scanner.isEmpty else { throw .malformed("timestamp text \"\(text)\"; set DateStyle to ISO") }
        let days = daysFromCivil(year: year, month: month, day: day)
        let unix = Double(days) * 86_400 + seconds - Double(offset)
        return Date(timeIntervalSince1970: unix)
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
