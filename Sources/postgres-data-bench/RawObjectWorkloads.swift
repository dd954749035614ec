import CLibPQ
import Foundation

/// Multi-row `INSERT … VALUES ($1, $2, $3, $4), (…)` with binary parameters, 10,000 rows a
/// statement, in one transaction: the plain fast way to insert without COPY.
func rawMultiRowInsert(_ raw: RawConnection, rows: Int) throws {
    try raw.exec("BEGIN")
    let epochMicros = Int64((epoch.timeIntervalSinceReferenceDate + 31_622_400) * 1e6)
    var first = 1
    while first <= rows {
        let last = min(rows, first + 9_999)
        let count = last - first + 1
        var sql = "INSERT INTO items(name, created_at, done, weight) VALUES "
        sql.reserveCapacity(count * 32)
        var buffer: [UInt8] = []
        buffer.reserveCapacity(count * 40)
        var offsets: [Int] = []
        var lengths: [Int32] = []
        offsets.reserveCapacity(count * 4)
        lengths.reserveCapacity(count * 4)
        func put<T: FixedWidthInteger>(_ value: T) {
            offsets.append(buffer.count)
            lengths.append(Int32(MemoryLayout<T>.size))
            withUnsafeBytes(of: value.bigEndian) { buffer.append(contentsOf: $0) }
        }
        for i in first...last {
            let p = (i - first) * 4
            sql += i == first ? "" : ","
            sql += "($\(p + 1),$\(p + 2),$\(p + 3),$\(p + 4))"
            var name = "item-\(i)"
            name.withUTF8 { bytes in
                offsets.append(buffer.count)
                lengths.append(Int32(bytes.count))
                buffer.append(contentsOf: bytes)
            }
            put(epochMicros + Int64(i) * 1_000_000)
            put(UInt8(i % 2 == 0 ? 1 : 0))
            put(Int32(i % 1000))
        }
        let types = [Oid](repeating: 0, count: count * 4).enumerated().map { index, _ -> Oid in [25, 1184, 16, 23][index % 4] }
        let formats = [Int32](repeating: 1, count: count * 4)
        let result = buffer.withUnsafeBytes { base -> OpaquePointer? in
            let pointers = offsets.map { UnsafePointer<CChar>?(base.baseAddress!.advanced(by: $0).assumingMemoryBound(to: CChar.self)) }
            return PQexecParams(raw.handle, sql, Int32(count * 4), types, pointers, lengths, formats, 1)
        }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else {
            throw BenchmarkError("raw insert: \(String(cString: PQerrorMessage(raw.handle)))")
        }
        PQclear(result)
        first = last + 1
    }
    try raw.exec("COMMIT")
}

/// `UPDATE items SET weight = $1 WHERE id = $2` for each of `ids`, pipelined (libpq
/// pipeline mode, a sync every 1,000 statements) in one transaction.
func rawPipelinedUpdates(_ raw: RawConnection, ids: [Int64]) throws {
    try raw.exec("BEGIN")
    guard PQenterPipelineMode(raw.handle) == 1 else { throw BenchmarkError("raw: pipeline mode") }
    let sql = "UPDATE items SET weight = $1 WHERE id = $2"
    let types: [Oid] = [23, 20]
    let lengths: [Int32] = [4, 8]
    let formats: [Int32] = [1, 1]
    var start = 0
    while start < ids.count {
        let chunk = ids[start..<min(ids.count, start + 1_000)]
        for id in chunk {
            var weight = Int32(id % 1000 + 1).bigEndian
            var key = id.bigEndian
            let sent = withUnsafeBytes(of: &weight) { weightBytes in
                withUnsafeBytes(of: &key) { keyBytes in
                    let values: [UnsafePointer<CChar>?] = [
                        weightBytes.baseAddress!.assumingMemoryBound(to: CChar.self),
                        keyBytes.baseAddress!.assumingMemoryBound(to: CChar.self),
                    ]
                    return PQsendQueryParams(raw.handle, sql, 2, types, values, lengths, formats, 1)
                }
            }
            guard sent == 1 else { throw BenchmarkError("raw: send \(String(cString: PQerrorMessage(raw.handle)))") }
        }
        guard PQpipelineSync(raw.handle) == 1 else { throw BenchmarkError("raw: pipeline sync") }
        while true {
            guard let result = PQgetResult(raw.handle) else {
                continue  // The end of one statement's results.
            }
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { break }
            guard status == PGRES_COMMAND_OK else { throw BenchmarkError("raw update: \(String(cString: PQerrorMessage(raw.handle)))") }
        }
        start += chunk.count
    }
    guard PQexitPipelineMode(raw.handle) == 1 else { throw BenchmarkError("raw: exit pipeline mode") }
    try raw.exec("COMMIT")
}
