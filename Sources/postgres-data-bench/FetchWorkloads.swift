import BenchmarkFloorObjects
import CLibPQ
import Foundation
import PostgresClient
import PostgresData

/// Keeps a checksum alive so that the reads computing it are not optimised away.
final class Sink: @unchecked Sendable {
    static let shared = Sink()
    private(set) var value = 0
    func add(_ checksum: Int) { value &+= checksum }
}

extension BenchItem {
    /// Every attribute read once, as ``Item/checksum`` reads a raw row.
    var checksum: Int {
        itemChecksum(id: objectID.primaryKey ?? 0, name: name, createdAt: createdAt, done: done, weight: Int(weight))
    }
}

/// Fails the workload when it did not see every row.
func expectRows(_ count: Int, _ rows: Int, _ what: String) throws {
    guard count == rows else { throw BenchmarkError("\(what): \(count) rows, expected \(rows)") }
}

/// A dictionary value read once.
func checksum(_ value: AttributeValue?) -> Int {
    switch value {
    case .integer(let number)?: Int(truncatingIfNeeded: number)
    case .string(let text)?: text.utf8.count
    case .boolean(let flag)?: flag ? 1 : 0
    case .date(let date)?: Int(date.timeIntervalSinceReferenceDate)
    default: 0
    }
}

/// W2 and W3 as user-visible work: fetch every row of `items`, read every attribute of
/// every result, and free it all — inside the timed region on both sides. The raw side
/// selects the same columns (the row version included where PostgresData reads it) and
/// decodes every value into a struct. Rows marked "extra" are variants that do less work
/// (faults never read), each against a raw side that does the same less.
func makeFetchWorkloads(container: PersistentContainer, client connection: Connection, raw: RawConnection, rows: Int) -> [Workload] {
    // A table that other workloads updated holds dead row versions, which both sides would
    // scan and an autovacuum could be cleaning meanwhile: filled again first.
    let fullTable: () async throws -> Void = {
        if try await !itemsAreAsFilled(connection, rows: rows) { try await fillItems(connection, rows: rows) }
    }
    /// Fetches through a fresh context, reads the results with `read`, then resets the
    /// context: the objects are freed before the run ends.
    func fetched<Result>(_ name: String, _ body: @escaping @Sendable (ManagedObjectContext) throws -> [Result],
                         read: @escaping @Sendable ([Result]) -> Int, raw rawSide: @escaping () throws -> Void) -> Workload {
        Workload(name: name, prepare: fullTable, client: {
            let context = container.newBackgroundContext()
            let sum = try await context.perform {
                let results = try body(context)
                try expectRows(results.count, rows, name)
                let sum = read(results)
                context.reset()
                return sum
            }
            Sink.shared.add(sum)
        }, raw: rawSide)
    }
    let readObjects: @Sendable ([BenchItem]) -> Int = { items in items.reduce(0) { $0 &+ $1.checksum } }
    return [
        fetched("W2 fetch \(rows.formatted()) objects, read every attribute", { context in
            var request = FetchRequest<BenchItem>()
            request.returnsObjectsAsFaults = false
            return try context.fetch(request)
        }, read: readObjects, raw: { try rawFetchVersionedStructs(raw, rows: rows) }),
        fetched("W2 fetch \(rows.formatted()) as faults (default), read every attribute", { context in
            try context.fetch(FetchRequest<BenchItem>())
        }, read: readObjects, raw: { try rawFetchVersionedStructs(raw, rows: rows) }),
        fetched("W2 extra: \(rows.formatted()) faults never read (B: id, xmin)", { context in
            try context.fetch(FetchRequest<BenchItem>())
        }, read: { $0.count }, raw: { try rawFetchKeysAndVersions(raw, rows: rows) }),
        fetched("W2 fetch \(rows.formatted()) object IDs (B: id)", { context in
            try context.fetch(FetchRequest<ManagedObjectID>(entityName: "BenchItem"))
        }, read: { ids in ids.reduce(0) { $0 &+ Int(truncatingIfNeeded: $1.primaryKey ?? 0) } }, raw: { try rawFetchKeys(raw, rows: rows) }),
        fetched("W2 fetch \(rows.formatted()) dictionaries, read every value (B: no xmin)", { context in
            try context.fetch(FetchRequest<FetchedDictionary>(entityName: "BenchItem"))
        }, read: { dictionaries in
            dictionaries.reduce(0) { sum, dictionary in
                sum &+ checksum(dictionary["name"]) &+ checksum(dictionary["createdAt"]) &+ checksum(dictionary["done"]) &+ checksum(dictionary["weight"])
            }
        }, raw: { try rawFetchStructs(raw, rows: rows) }),
        // The floor of any object graph with uniquing, raw against raw: what a class instance
        // per row costs, then a key map besides; PostgresData's W2 and W3 rows sit above it.
        Workload(name: "W2 floor: raw, a class instance per row (B: structs)", prepare: fullTable, client: {
            try rawFetchIdentityMapped(raw, rows: rows, mapped: false, as: MappedItem.self)
        }, raw: { try rawFetchVersionedStructs(raw, rows: rows) }),
        Workload(name: "W2 floor: raw, a class instance per row in a key map (B: structs)", prepare: fullTable, client: {
            try rawFetchIdentityMapped(raw, rows: rows, mapped: true, as: MappedItem.self)
        }, raw: { try rawFetchVersionedStructs(raw, rows: rows) }),
        // As above, the class in a module of its own (as a library's objects are): reading it
        // costs the reading loop a retain and a release of each object.
        Workload(name: "W2 floor: raw, in a key map, read through another module (B: structs)", prepare: fullTable, client: {
            try rawFetchIdentityMapped(raw, rows: rows, mapped: true, as: LibraryItem.self)
        }, raw: { try rawFetchVersionedStructs(raw, rows: rows) }),
        Workload(name: "W3 asynchronous fetch \(rows.formatted()), batches of 10,000, read every attribute", prepare: fullTable, client: {
            let context = container.newBackgroundContext()
            var request = FetchRequest<BenchItem>()
            request.fetchBatchSize = 10_000
            let asynchronous = AsynchronousFetchRequest(fetchRequest: request)
            let result = try await context.perform { () throws in try context.execute(asynchronous) }
            try await result.wait()
            let sum = try await context.perform {
                let items = result.finalResult ?? []
                try expectRows(items.count, rows, "W3 asynchronous fetch")
                let sum = readObjects(items)
                context.reset()
                return sum
            }
            Sink.shared.add(sum)
        }, raw: {
            try rawCursorVersionedStructs(raw, rows: rows, keeping: true)
        }),
        Workload(name: "W3 floor: raw cursor, a class instance per row in a key map (B: structs)", prepare: fullTable, client: {
            try rawCursorIdentityMapped(raw, rows: rows, as: MappedItem.self)
        }, raw: { try rawCursorVersionedStructs(raw, rows: rows, keeping: true) }),
        Workload(name: "W3 floor: raw cursor, in a key map, read through another module (B: structs)", prepare: fullTable, client: {
            try rawCursorIdentityMapped(raw, rows: rows, as: LibraryItem.self)
        }, raw: { try rawCursorVersionedStructs(raw, rows: rows, keeping: true) }),
        Workload(name: "W3 walk \(rows.formatted()) in batches of 10,000, read and released", prepare: fullTable, client: {
            let context = container.newBackgroundContext()
            var request = FetchRequest<BenchItem>()
            request.fetchBatchSize = 10_000
            request.returnsObjectsAsFaults = false
            let walked = Counter()
            try await context.enumerateBatches(of: request) { items in
                walked.add(items.count)
                Sink.shared.add(readObjects(items))
            }
            try expectRows(walked.value, rows, "W3 walk")
        }, raw: {
            try rawCursorVersionedStructs(raw, rows: rows, keeping: false)
        }),
    ]
}

/// Raw W2: every column and the row version in one binary result, decoded into structs,
/// every value read, all freed.
func rawFetchVersionedStructs(_ raw: RawConnection, rows: Int) throws {
    let result = try raw.execBinary(selectAllWithVersions)
    let count = PQntuples(result)
    var items: [Item] = []
    items.reserveCapacity(Int(count))
    for row in 0..<count { items.append(rawVersionedItem(result, row)) }
    PQclear(result)
    try expectRows(items.count, rows, "raw fetch")
    Sink.shared.add(items.reduce(0) { $0 &+ $1.checksum })
}

/// An object per row, as a floor holds it: made from a decoded row, found by its key, read.
protocol FloorObject: AnyObject {
    init(_ item: Item)
    var key: Int64 { get }
    /// Every attribute read once, as ``Item/checksum`` reads a raw row.
    var checksum: Int { get }
}

/// One object per row, as any identity-mapped object graph holds it; a class of the module
/// that reads it.
final class MappedItem: FloorObject {
    var item: Item
    init(_ item: Item) { self.item = item }
    var key: Int64 { item.id }
    var checksum: Int { item.checksum }
}

/// The same object as a library hands it out: its values read through another module.
extension LibraryItem: FloorObject {
    convenience init(_ item: Item) {
        self.init(id: item.id, name: item.name, createdAt: item.createdAt, done: item.done, weight: item.weight,
                  version: item.version)
    }

    var key: Int64 { id }

    var checksum: Int { itemChecksum(id: id, name: name, createdAt: createdAt, done: done, weight: Int(weight)) }
}

/// The leanest map from key to object for these keys: linear probing over the objects
/// themselves, at most three quarters full, each probe comparing the object's own key. Keys
/// are their own hash: the table's keys come in one run, which then fills one run of slots
/// (no cache miss per insertion; PostgresData's identity map keeps runs together too).
struct KeyMap<Object: FloorObject> {
    private var slots: [Object?]
    private let mask: Int

    init(capacity: Int) {
        var size = 1
        while size < capacity + capacity / 3 + 1 { size <<= 1 }
        slots = Array(repeating: nil, count: size)
        mask = size - 1
    }

    /// Inserts `object` unless one with its key is there; returns the one kept.
    @discardableResult
    mutating func insert(_ object: Object) -> Object {
        var index = Int(truncatingIfNeeded: object.key) & mask
        while let existing = slots[index] {
            if existing.key == object.key { return existing }
            index = (index + 1) & mask
        }
        slots[index] = object
        return object
    }
}

/// The least an object graph does beyond ``rawFetchVersionedStructs(_:rows:)``: each row a
/// class instance (`mapped`: found again by its key in a ``KeyMap``); every value read, all
/// freed.
func rawFetchIdentityMapped<Object: FloorObject>(_ raw: RawConnection, rows: Int, mapped: Bool, as _: Object.Type) throws {
    let result = try raw.execBinary(selectAllWithVersions)
    let count = PQntuples(result)
    var objects: [Object] = []
    objects.reserveCapacity(Int(count))
    var map = KeyMap<Object>(capacity: mapped ? Int(count) : 0)
    for row in 0..<count {
        let object = Object(rawVersionedItem(result, row))
        objects.append(mapped ? map.insert(object) : object)
    }
    PQclear(result)
    try expectRows(objects.count, rows, "raw fetch into objects")
    Sink.shared.add(objects.reduce(0) { $0 &+ $1.checksum })
}

/// Raw "faults": the same result, only the key and the version decoded, the rows kept
/// until the end (as unfired faults keep theirs).
func rawFetchKeysAndVersions(_ raw: RawConnection, rows: Int) throws {
    let result = try raw.execBinary(selectAllWithVersions)
    defer { PQclear(result) }
    let count = PQntuples(result)
    var keys: [(Int64, UInt32)] = []
    keys.reserveCapacity(Int(count))
    for row in 0..<count {
        keys.append((Int64(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, 0)).loadUnaligned(as: Int64.self)),
                     UInt32(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, 5)).loadUnaligned(as: UInt32.self))))
    }
    try expectRows(keys.count, rows, "raw keys and versions")
    Sink.shared.add(keys.count)
}

/// Raw object IDs: `SELECT id`, decoded.
func rawFetchKeys(_ raw: RawConnection, rows: Int) throws {
    let result = try raw.execBinary("SELECT id FROM items")
    defer { PQclear(result) }
    let count = PQntuples(result)
    var keys: [Int64] = []
    keys.reserveCapacity(Int(count))
    for row in 0..<count { keys.append(Int64(bigEndian: UnsafeRawPointer(PQgetvalue(result, row, 0)).loadUnaligned(as: Int64.self))) }
    try expectRows(keys.count, rows, "raw keys")
    Sink.shared.add(keys.reduce(0) { $0 &+ Int(truncatingIfNeeded: $1) })
}

/// Raw W3: a cursor read 10,000 rows at a time with the row versions, every value decoded
/// and read; `keeping` every struct until the end (an asynchronous fetch's final result) or
/// releasing each batch (a batch walk).
func rawCursorVersionedStructs(_ raw: RawConnection, rows: Int, keeping: Bool) throws {
    // Kept structs are decoded straight into the final array (no copy of each batch into it).
    var kept: [Item] = []
    if keeping { kept.reserveCapacity(rows) }
    var sum = 0
    var batchItems: [Item] = []
    batchItems.reserveCapacity(10_000)
    let count = try rawCursorBatches(raw) { result, batch in
        if keeping {
            let first = kept.count
            for row in 0..<batch { kept.append(rawVersionedItem(result, row)) }
            for item in kept[first...] { sum &+= item.checksum }
        } else {
            for row in 0..<batch { batchItems.append(rawVersionedItem(result, row)) }
            for item in batchItems { sum &+= item.checksum }
            batchItems.removeAll(keepingCapacity: true)
        }
    }
    try expectRows(count, rows, "raw cursor")
    Sink.shared.add(sum &+ kept.count)
}

/// The least an object graph does beyond the keeping ``rawCursorVersionedStructs(_:rows:keeping:)``:
/// each row a class instance found again by its key in a ``KeyMap``, every value read once
/// the last batch is in (as an asynchronous fetch's final result is read), all freed.
func rawCursorIdentityMapped<Object: FloorObject>(_ raw: RawConnection, rows: Int, as _: Object.Type) throws {
    var objects: [Object] = []
    objects.reserveCapacity(rows)
    var map = KeyMap<Object>(capacity: rows)
    let count = try rawCursorBatches(raw) { result, batch in
        for row in 0..<batch { objects.append(map.insert(Object(rawVersionedItem(result, row)))) }
    }
    try expectRows(count, rows, "raw cursor into objects")
    Sink.shared.add(objects.reduce(0) { $0 &+ $1.checksum })
}

/// Reads every row of `items` with its version through a cursor, 10,000 rows a FETCH, the
/// next FETCH sent before `body` decodes a batch (the server reads it meanwhile); returns
/// how many rows came.
private func rawCursorBatches(_ raw: RawConnection, _ body: (OpaquePointer, Int32) -> Void) throws -> Int {
    try raw.exec("BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ")
    try raw.exec("DECLARE c NO SCROLL CURSOR FOR \(selectAllWithVersions)")
    var count = 0
    let fetch = "FETCH FORWARD 10000 FROM c"
    try raw.sendBinary(fetch)
    while true {
        let result = try raw.receiveBinary(fetch)
        let batch = PQntuples(result)
        if batch == 10_000 { try raw.sendBinary(fetch) }
        body(result, batch)
        PQclear(result)
        count += Int(batch)
        if batch < 10_000 { break }
    }
    try raw.exec("CLOSE c")
    try raw.exec("COMMIT")
    return count
}
