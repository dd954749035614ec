import CLibPQ
import Foundation
import PostgresClient

struct Item {
    var id: Int64
    var name: String
    var createdAt: Date
    var done: Bool
    var weight: Int32
    /// The row version (`xmin`), when the workload reads it.
    var version: UInt32 = 0

    /// Every attribute read once: what a workload that "reads every attribute" sums.
    var checksum: Int { itemChecksum(id: id, name: name, createdAt: createdAt, done: done, weight: Int(weight)) }
}

/// The sum a workload that "reads every attribute" makes of an item's values, whichever way
/// each side reads them (a struct's fields, an object's getters).
@inline(__always)
func itemChecksum(id: Int64, name: String, createdAt: Date, done: Bool, weight: Int) -> Int {
    Int(truncatingIfNeeded: id) &+ name.utf8.count &+ Int(createdAt.timeIntervalSinceReferenceDate) &+ (done ? 1 : 0) &+ weight
}

/// One workload: the same work done through PostgresClient and through raw libpq.
struct Workload {
    var name: String
    /// Runs before each measured run, untimed (resetting the table).
    var prepare: () async throws -> Void
    var client: () async throws -> Void
    var raw: () throws -> Void
    /// Pairs of runs for each pair `--runs` asks for: more where one run is short and the
    /// server's time for the same statement varies widely from one run to the next, on
    /// either side, so that a few pairs would leave the ratio to chance (W6).
    var pairsPerRun = 1
}

let selectAll = "SELECT id, name, created_at, done, weight FROM items"
/// The same with each row's version (`xmin`), which PostgresData reads for optimistic
/// locking: the server must then project every row instead of sending the stored tuple.
let selectAllWithVersions = "SELECT id, name, created_at, done, weight, xmin FROM items"
let epoch = Date(timeIntervalSince1970: 1_704_067_200)

func makeWorkloads(client connection: Connection, raw: RawConnection, rows: Int) -> [Workload] {
    let inserts = max(1, rows / 10)
    let resetEmpty: () async throws -> Void = {
        try await connection.execute(script: "TRUNCATE items RESTART IDENTITY")
    }
    let resetFull: () async throws -> Void = {
        try await fillItems(connection, rows: rows)
        try await connection.execute(script: "CHECKPOINT")
        try await connection.execute(script: "SELECT count(*) FROM items")
    }
    var loaded = false
    let loadOnce: () async throws -> Void = {
        if !loaded { try await resetFull(); loaded = true }
    }

    return [
        Workload(name: "insert \(inserts.formatted()) rows (COPY binary)", prepare: resetEmpty, client: {
            try await connection.copyRows(into: "items", columns: ["name", "created_at", "done", "weight"]) { writer in
                for i in 1...inserts {
                    try writer.append("item-\(i)", epoch.addingTimeInterval(Double(i)), i % 2 == 0, Int32(i % 1000))
                }
            }
        }, raw: {
            try rawCopy(raw, rows: inserts)
        }),
        Workload(name: "fetch \(rows.formatted()) rows into structs", prepare: loadOnce, client: {
            let result = try await connection.query(selectAll)
            var items: [Item] = []
            items.reserveCapacity(result.count)
            for row in result {
                let (id, name, createdAt, done, weight) = try row.decode((Int64, String, Date, Bool, Int32).self)
                items.append(Item(id: id, name: name, createdAt: createdAt, done: done, weight: weight))
            }
            precondition(items.count == rows)
        }, raw: {
            try rawFetchStructs(raw, rows: rows)
        }),
        Workload(name: "stream \(rows.formatted()) rows, cursor batches of 10,000", prepare: loadOnce, client: {
            var count = 0
            var weights = 0
            for try await batch in try connection.stream(selectAll, mode: .cursor(batchSize: 10_000)) {
                for row in batch {
                    let (id, name, createdAt, done, weight) = try row.decode((Int64, String, Date, Bool, Int32).self)
                    let item = Item(id: id, name: name, createdAt: createdAt, done: done, weight: weight)
                    weights &+= Int(item.weight)
                    count += 1
                }
            }
            precondition(count == rows)
        }, raw: {
            try rawCursorStructs(raw, rows: rows)
        }),
        Workload(name: "update \(rows.formatted()) rows RETURNING id", prepare: loadOnce, client: {
            let result = try await connection.query("UPDATE items SET weight = weight + 1 RETURNING id")
            var ids: [Int64] = []
            ids.reserveCapacity(result.count)
            for row in result { ids.append(try row.decode(Int64.self, at: 0)) }
            precondition(ids.count == rows)
        }, raw: {
            try rawUpdateReturningIDs(raw, rows: rows)
        }),
    ]
}

/// The raw baseline of batch updates: the UPDATE … RETURNING id, every ID read.
func rawUpdateReturningIDs(_ raw: RawConnection, rows: Int) throws {
    let result = try raw.execBinary("UPDATE items SET weight = weight + 1 RETURNING id")
    defer { PQclear(result) }
    var ids: [Int64] = []
    ids.reserveCapacity(Int(PQntuples(result)))
    for row in 0..<PQntuples(result) {
        ids.append(Int64(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, 0)).loadUnaligned(as: Int64.self)))
    }
    precondition(ids.count == rows)
}

/// The size of `items` on disk when ``fillItems(_:rows:)`` last filled it.
private let filledSize = Locked<Int64>(-1)

/// True when `items` holds `rows` rows and is the size it was filled at: no rows were updated
/// or deleted since (a row updated leaves a dead version behind, in a page of its own when
/// the table was filled full).
func itemsAreAsFilled(_ connection: Connection, rows: Int) async throws -> Bool {
    let (count, size) = try await connection.query("SELECT count(*), pg_relation_size('items') FROM items")[0].decode((Int64, Int64).self)
    return count == rows && size == filledSize.withLock { $0 }
}

/// Empties `items` and fills it with `rows` rows (`item-1`, …), then vacuums and analyzes it.
func fillItems(_ connection: Connection, rows: Int) async throws {
    try await connection.execute(script: """
        TRUNCATE items RESTART IDENTITY;
        INSERT INTO items(name, created_at, done, weight)
        SELECT 'item-' || i, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second', i % 2 = 0, i % 1000
        FROM generate_series(1, \(rows)) AS i
        """)
    // Each on its own: a multi-statement script is one implicit transaction, and VACUUM refuses those.
    try await connection.execute(script: "VACUUM (ANALYZE) items")
    let size = try await connection.query("SELECT pg_relation_size('items')")[0].decode(Int64.self, at: 0)
    filledSize.withLock { $0 = size }
}

/// The raw baseline of fetches: one binary PQexec, every row decoded into a struct.
func rawFetchStructs(_ raw: RawConnection, rows: Int) throws {
    let result = try raw.execBinary(selectAll)
    defer { PQclear(result) }
    let count = PQntuples(result)
    var items: [Item] = []
    items.reserveCapacity(Int(count))
    for row in 0..<count { items.append(rawItem(result, row)) }
    precondition(items.count == rows)
}

/// The raw baseline of cursor streams: `DECLARE`, then `FETCH FORWARD 10000` in binary
/// into structs until the cursor is exhausted; `withVersions` reads each row's `xmin` too.
func rawCursorStructs(_ raw: RawConnection, rows: Int, withVersions: Bool = false) throws {
    try raw.exec("BEGIN READ ONLY")
    try raw.exec("DECLARE c NO SCROLL CURSOR FOR \(withVersions ? selectAllWithVersions : selectAll)")
    var count = 0
    var weights = 0
    while true {
        let result = try raw.execBinary("FETCH FORWARD 10000 FROM c")
        let batch = PQntuples(result)
        for row in 0..<batch {
            let item = rawItem(result, row)
            weights &+= Int(item.weight)
            if withVersions {
                weights &+= Int(UInt32(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, 5)).loadUnaligned(as: UInt32.self)))
            }
        }
        count += Int(batch)
        PQclear(result)
        if batch < 10_000 { break }
    }
    try raw.exec("CLOSE c")
    try raw.exec("COMMIT")
    precondition(count == rows)
}

/// Binary COPY written byte by byte, as hand-written libpq code would; with `keys`, the
/// `id` column too.
func rawCopy(_ raw: RawConnection, rows: Int, keys: [Int64]? = nil) throws {
    let epochMicros = Int64((epoch.timeIntervalSinceReferenceDate + 31_622_400) * 1e6)
    try rawCopyIn(raw, columns: keys == nil ? "name, created_at, done, weight" : "id, name, created_at, done, weight", rows: rows) { i, buffer in
        if let keys {
            buffer.put(Int16(5))
            buffer.put(Int32(8)); buffer.put(keys[i - 1])
        } else {
            buffer.put(Int16(4))
        }
        buffer.put("item-\(i)")
        buffer.put(Int32(8)); buffer.put(epochMicros + Int64(i) * 1_000_000)
        buffer.put(Int32(1)); buffer.bytes.append(i % 2 == 0 ? 1 : 0)
        buffer.put(Int32(4)); buffer.put(Int32(i % 1000))
    }
}

/// The bytes of a binary COPY being written, sent in chunks of 64 KiB.
struct CopyBuffer {
    var bytes: [UInt8] = []

    @inline(__always)
    mutating func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }

    /// A text field: its length, then its UTF-8.
    @inline(__always)
    mutating func put(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in put(Int32(utf8.count)); bytes.append(contentsOf: utf8) }
    }
}

/// `COPY items(columns) FROM STDIN (FORMAT binary)`: the header, `rows` rows written by
/// `row` (given 1…rows), the trailer, and the result checked.
@inline(__always)
func rawCopyIn(_ raw: RawConnection, columns: String, rows: Int, _ row: (Int, inout CopyBuffer) -> Void) throws {
    let start = PQexec(raw.handle, "COPY items(\(columns)) FROM STDIN (FORMAT binary)")
    guard PQresultStatus(start) == PGRES_COPY_IN else { throw BenchmarkError("raw copy start") }
    PQclear(start)
    var buffer = CopyBuffer()
    // Chunks of 64 KiB, as PostgresData's COPY sends: smaller than the socket's buffer, so the
    // server reads one while the next is encoded.
    buffer.bytes.reserveCapacity(1 << 16 + 4096)
    buffer.bytes.append(contentsOf: [0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00])
    buffer.put(Int32(0)); buffer.put(Int32(0))
    for i in 1...rows {
        row(i, &buffer)
        if buffer.bytes.count >= 1 << 16 {
            _ = buffer.bytes.withUnsafeBytes { PQputCopyData(raw.handle, $0.baseAddress!.assumingMemoryBound(to: CChar.self), Int32($0.count)) }
            buffer.bytes.removeAll(keepingCapacity: true)
        }
    }
    buffer.put(Int16(-1))
    _ = buffer.bytes.withUnsafeBytes { PQputCopyData(raw.handle, $0.baseAddress!.assumingMemoryBound(to: CChar.self), Int32($0.count)) }
    guard PQputCopyEnd(raw.handle, nil) == 1 else { throw BenchmarkError("raw copy end") }
    while let result = PQgetResult(raw.handle) {
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw BenchmarkError("raw copy: \(String(cString: PQerrorMessage(raw.handle)))") }
    }
}
