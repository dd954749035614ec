import CLibPQ
import Foundation

/// Multi-row `INSERT … VALUES ($1, $2, $3, $4), (…)`: one statement of 1,000 rows prepared
/// once and executed with text parameters, in one transaction — what the reference C
/// program (`../shared/reference/cbench.c`, `multirow`) does.
func rawMultiRowInsert(_ raw: RawConnection, rows: Int) throws {
    let batch = 1_000
    var sql = "INSERT INTO items(name, created_at, done, weight) VALUES "
    for row in 0..<batch {
        sql += row == 0 ? "" : ","
        sql += "($\(row * 4 + 1),$\(row * 4 + 2),$\(row * 4 + 3),$\(row * 4 + 4))"
    }
    let name = "raw_multirow_\(rows)"
    let prepared = PQprepare(raw.handle, name, sql, 0, nil)
    let preparedStatus = PQresultStatus(prepared)
    PQclear(prepared)
    guard preparedStatus == PGRES_COMMAND_OK || String(cString: PQerrorMessage(raw.handle)).contains("already exists") else {
        throw BenchmarkError("raw prepare: \(String(cString: PQerrorMessage(raw.handle)))")
    }
    try raw.exec("BEGIN")
    var storage = [CChar](repeating: 0, count: batch * 64)
    var offsets = [Int](repeating: 0, count: batch * 4)
    var first = 1
    while first <= rows {
        let count = min(batch, rows - first + 1)
        var used = 0
        // Text parameters written straight into one buffer, as C's sprintf would.
        func begin(_ slot: Int) { offsets[slot] = used }
        func byte(_ value: UInt8) { storage[used] = CChar(bitPattern: value); used += 1 }
        func digits(_ value: Int, width: Int = 0) {
            var scratch: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            var count = 0
            var rest = value
            withUnsafeMutableBytes(of: &scratch) { bytes in
                repeat {
                    bytes[count] = UInt8(48 + rest % 10)
                    rest /= 10
                    count += 1
                } while rest > 0 || count < width
                for position in stride(from: count - 1, through: 0, by: -1) { byte(bytes[position]) }
            }
        }
        func text(_ literal: StaticString) {
            literal.withUTF8Buffer { for value in $0 { byte(value) } }
        }
        for row in 0..<batch {
            let i = first + min(row, count - 1)
            begin(row * 4); text("item-"); digits(i); byte(0)
            let day = 1 + i / 86_400, rest = i % 86_400
            begin(row * 4 + 1); text("2024-01-"); digits(day, width: 2); byte(32); digits(rest / 3600, width: 2); byte(58)
            digits(rest / 60 % 60, width: 2); byte(58); digits(rest % 60, width: 2); text("+00"); byte(0)
            begin(row * 4 + 2); byte(i % 2 == 0 ? 116 : 102); byte(0)
            begin(row * 4 + 3); digits(i % 1000); byte(0)
        }
        let result: OpaquePointer? = storage.withUnsafeBufferPointer { base in
            let values = offsets.map { UnsafePointer<CChar>?(base.baseAddress! + $0) }
            if count == batch {
                return PQexecPrepared(raw.handle, name, Int32(batch * 4), values, nil, nil, 0)
            }
            // The last, shorter batch: the same statement text cut to its rows.
            var tail = "INSERT INTO items(name, created_at, done, weight) VALUES "
            for row in 0..<count {
                tail += row == 0 ? "" : ","
                tail += "($\(row * 4 + 1),$\(row * 4 + 2),$\(row * 4 + 3),$\(row * 4 + 4))"
            }
            return PQexecParams(raw.handle, tail, Int32(count * 4), nil, Array(values.prefix(count * 4)), nil, nil, 0)
        }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else {
            throw BenchmarkError("raw insert: \(String(cString: PQerrorMessage(raw.handle)))")
        }
        PQclear(result)
        first += count
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

/// A one-dimensional binary array parameter of fixed-width elements (`int8[]`, `xid[]`,
/// `int4[]`), as libpq code builds it.
func binaryArray<T: FixedWidthInteger>(_ values: [T], elementType: UInt32) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(20 + values.count * (4 + MemoryLayout<T>.size))
    func put<V: FixedWidthInteger>(_ value: V) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
    put(Int32(1)); put(Int32(0)); put(elementType); put(Int32(values.count)); put(Int32(1))
    for value in values { put(Int32(MemoryLayout<T>.size)); put(value) }
    return bytes
}

/// Raw W6: the set-based statement PostgresData's save sends — one `UPDATE … FROM unnest`
/// of keys, versions and new weights, version-checked, the new versions returned and
/// every row accounted for — in a transaction.
func rawSetBasedUpdate(_ raw: RawConnection, keys: [Int64], versions: [UInt32]) throws {
    try raw.exec("BEGIN")
    let sql = """
        UPDATE items AS t SET weight = u.c0 FROM unnest($1::bigint[], $2::xid[], $3::int4[]) AS u(k, v, c0)
        WHERE t.id = u.k AND t.xmin = u.v RETURNING t.id, t.xmin
        """
    let parameters = [binaryArray(keys, elementType: 20), binaryArray(versions, elementType: 28),
                      binaryArray(keys.map { Int32($0 % 1000 + 1) }, elementType: 23)]
    let result: OpaquePointer? = parameters[0].withUnsafeBufferPointer { a in
        parameters[1].withUnsafeBufferPointer { b in
            parameters[2].withUnsafeBufferPointer { c in
                let values: [UnsafePointer<CChar>?] = [a, b, c].map { UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self) }
                let lengths = parameters.map { Int32($0.count) }
                let formats: [Int32] = [1, 1, 1]
                return PQexecParams(raw.handle, sql, 3, nil, values, lengths, formats, 1)
            }
        }
    }
    guard PQresultStatus(result) == PGRES_TUPLES_OK else { throw BenchmarkError("raw set-based update: \(String(cString: PQerrorMessage(raw.handle)))") }
    var written = 0
    for row in 0..<PQntuples(result) {
        written &+= Int(UInt32(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, 1)).loadUnaligned(as: UInt32.self))) & 1 | 1
    }
    let count = Int(PQntuples(result))
    PQclear(result)
    guard count == keys.count, written == count else { throw BenchmarkError("raw set-based update: \(count) of \(keys.count) rows") }
    try raw.exec("COMMIT")
}

/// Raw W1 as a save does it: `count` keys taken from the identity sequence in one
/// statement, then the rows with their keys by binary COPY, in one transaction.
func rawCopyWithKeys(_ raw: RawConnection, rows: Int) throws {
    try raw.exec("BEGIN")
    let keys = try rawAllocateKeys(raw, rows: rows)
    try rawCopy(raw, rows: rows, keys: keys)
    try raw.exec("COMMIT")
}

/// `rows` keys from the identity sequence, in one statement.
func rawAllocateKeys(_ raw: RawConnection, rows: Int) throws -> [Int64] {
    let result = try raw.execBinary("SELECT array_agg(nextval('items_id_seq'::regclass)) FROM generate_series(1, \(rows))")
    defer { PQclear(result) }
    // int8[]: a 20-byte header, then a 4-byte length and 8 bytes per key.
    let base: UnsafeRawPointer = UnsafeRawPointer(PQgetvalue(result, 0, 0))
    return (0..<rows).map { Int64(bigEndian: base.loadUnaligned(fromByteOffset: 20 + $0 * 12 + 4, as: Int64.self)) }
}

/// The least an object graph does beyond ``rawCopyWithKeys(_:rows:)``: each new row a class
/// instance made first (as objects are inserted before a save), found by a temporary number
/// in a ``KeyMap`` sized in advance, then given its key and found by it in a second map; the
/// COPY encodes each row from its instance; all freed.
func rawSaveMappedObjects(_ raw: RawConnection, rows: Int) throws {
    var objects: [MappedItem] = []
    var temporary = KeyMap<MappedItem>(capacity: rows)
    for i in 1...rows {
        let item = Item(id: Int64(i), name: "item-\(i)", createdAt: epoch.addingTimeInterval(Double(i)), done: i % 2 == 0, weight: Int32(i % 1000))
        objects.append(temporary.insert(MappedItem(item)))
    }
    try raw.exec("BEGIN")
    let keys = try rawAllocateKeys(raw, rows: rows)
    var permanent = KeyMap<MappedItem>(capacity: rows)
    for (object, key) in zip(objects, keys) {
        object.item.id = key
        permanent.insert(object)
    }
    try rawCopyIn(raw, columns: "id, name, created_at, done, weight", rows: rows) { i, buffer in
        let item = objects[i - 1].item
        buffer.put(Int16(5))
        buffer.put(Int32(8)); buffer.put(item.id)
        buffer.put(item.name)
        // Microseconds since PostgreSQL's epoch, 2000-01-01: 366 days before Foundation's.
        buffer.put(Int32(8)); buffer.put(Int64(((item.createdAt.timeIntervalSinceReferenceDate + 31_622_400) * 1e6).rounded()))
        buffer.put(Int32(1)); buffer.bytes.append(item.done ? 1 : 0)
        buffer.put(Int32(4)); buffer.put(item.weight)
    }
    try raw.exec("COMMIT")
    Sink.shared.add(objects.count)
}
