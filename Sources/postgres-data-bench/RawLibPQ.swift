import CLibPQ
import Foundation
import PostgresClient

/// The benchmark's baseline: libpq called directly, doing the plainest fast thing, with no
/// PostgresClient code in the way. Each is used by one thread at a time.
final class RawConnection: @unchecked Sendable {
    let handle: OpaquePointer

    init(_ configuration: Configuration) throws {
        guard let handle = PQconnectdb(configuration.connectionString()), PQstatus(handle) == CONNECTION_OK else {
            throw BenchmarkError("raw libpq could not connect")
        }
        self.handle = handle
    }

    deinit { PQfinish(handle) }

    func exec(_ sql: String) throws {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw BenchmarkError("raw: \(sql): \(String(cString: PQerrorMessage(handle)))")
        }
    }

    /// Sends `sql` (binary results) without waiting: ``receiveBinary(_:)`` reads its result.
    func sendBinary(_ sql: String) throws {
        guard PQsendQueryParams(handle, sql, 0, nil, nil, nil, nil, 1) == 1 else {
            throw BenchmarkError("raw: \(sql): \(String(cString: PQerrorMessage(handle)))")
        }
    }

    /// The rows of the statement sent last by ``sendBinary(_:)``; the caller clears them.
    func receiveBinary(_ sql: String) throws -> OpaquePointer {
        var kept: OpaquePointer?
        var failed = false
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) == PGRES_TUPLES_OK && kept == nil { kept = result; continue }
            failed = failed || PQresultStatus(result) == PGRES_FATAL_ERROR
            PQclear(result)
        }
        guard let kept, !failed else {
            if let kept { PQclear(kept) }
            throw BenchmarkError("raw: \(sql): \(String(cString: PQerrorMessage(handle)))")
        }
        return kept
    }

    /// Runs `sql` with binary results and returns the result; the caller clears it.
    func execBinary(_ sql: String) throws -> OpaquePointer {
        try sendBinary(sql)
        return try receiveBinary(sql)
    }
}

/// Decodes one binary `items` row the way hand-written libpq code would.
@inline(__always)
func rawItem(_ result: OpaquePointer, _ row: Int32) -> Item {
    func int64(_ column: Int32) -> Int64 {
        Int64(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, column)).loadUnaligned(as: Int64.self))
    }
    let namePointer = UnsafeRawPointer(PQgetvalue(result, row, 1))
    let name = String(decoding: UnsafeRawBufferPointer(start: namePointer, count: Int(PQgetlength(result, row, 1))), as: UTF8.self)
    let micros = int64(2)
    let done = PQgetvalue(result, row, 3).pointee != 0
    let weight = Int32(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, 4)).loadUnaligned(as: Int32.self))
    return Item(id: int64(0), name: name, createdAt: Date(timeIntervalSinceReferenceDate: Double(micros) / 1e6 - 31_622_400),
                done: done, weight: weight)
}

/// ``rawItem(_:_:)`` with the row version of column 5 (`selectAllWithVersions`).
@inline(__always)
func rawVersionedItem(_ result: OpaquePointer, _ row: Int32) -> Item {
    var item = rawItem(result, row)
    item.version = UInt32(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, 5)).loadUnaligned(as: UInt32.self))
    return item
}

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
