import Foundation
import PostgresClient
import PostgresData

@Entity(tableName: "items")
final class BenchItem: ManagedObject {
    var name: String
    var createdAt: Date
    var done = false
    var weight: Int32 = 0
}

/// Rows counted on a context's queue.
final class Counter: @unchecked Sendable {
    private(set) var value = 0
    func add(_ count: Int) { value += count }
}

/// Objects fetched untimed before a measured save.
final class FetchedObjects: @unchecked Sendable {
    var context: ManagedObjectContext?
    /// W6's input: the fetched objects, holding their values (used on their context's queue).
    var items: [BenchItem] = []
    /// W6's raw input: the keys and versions of the same rows.
    var keys: [Int64] = []
    var versions: [UInt32] = []

    /// Fetches `count` items with their values into a new context, untimed: held in an
    /// array, as the raw side holds its keys and versions, so that the measured block changes
    /// the objects and saves, nothing else.
    func fetch(_ count: Int, from container: PersistentContainer) async throws {
        let context = container.newBackgroundContext()
        // Read and written on the context's queue only.
        try await context.perform {
            var request = FetchRequest<BenchItem>()
            request.fetchLimit = count
            request.returnsObjectsAsFaults = false
            self.items = try context.fetch(request)
        }
        try expectRows(items.count, count, "W6 input")
        self.context = context
    }
}

/// W6's pairs for each pair `--runs` asks for: its statement took 46–110 ms from one run to
/// the next on either side (2026-11-29, this 2-core machine), and its pairs cost seconds.
let w6PairsPerRun = 4

/// The object-graph workloads: W1 (save inserted objects), W2 (fetch objects, faults, IDs,
/// dictionaries), W4 (batch update, and the naive way for contrast) and W6 (save updated objects).
func makeObjectWorkloads(container: PersistentContainer, client connection: Connection, raw: RawConnection,
                         rows: Int) -> [Workload] {
    let inserts = max(1, rows / 10)
    let updates = max(1, rows / 100)
    let resetEmpty: () async throws -> Void = {
        try await connection.execute(script: "TRUNCATE items RESTART IDENTITY")
    }
    let fetched = FetchedObjects()
    let prepareUpdates: () async throws -> Void = {
        try await fillItems(connection, rows: updates)
        try await fetched.fetch(updates, from: container)
        // The raw side's input: the same rows' keys and versions, read untimed too.
        let rows = try await connection.query("SELECT id, xmin FROM items ORDER BY id")
        fetched.keys = try rows.map { try $0.decode(Int64.self, at: 0) }
        fetched.versions = try rows.map { try $0.decode(TransactionID.self, at: 1).rawValue }
    }
    let fullTable: () async throws -> Void = {
        fetched.context = nil
        fetched.items = []
        let count = try await connection.query("SELECT count(*) FROM items")[0].decode(Int64.self, at: 0)
        if count != rows { try await fillItems(connection, rows: rows) }
    }
    return [
        Workload(name: "W4 batch update \(rows.formatted()), IDs returned", prepare: fullTable, client: {
            var update = BatchUpdateRequest(entity: BenchItem.self, propertiesToUpdate: ["weight": try .expression("weight + 1")])
            update.resultType = .updatedObjectIDs
            let result = try await container.newBackgroundContext().execute(update)
            precondition(result.objectIDs.count == rows)
        }, raw: {
            try rawUpdateReturningIDs(raw, rows: rows)
        }),
        Workload(name: "W1 batch insert \(rows.formatted()) (object handler)", prepare: resetEmpty, client: {
            var next = 0
            let insert = try BatchInsertRequest(entity: BenchItem.self, managedObjectHandler: { item in
                guard next < rows else { return true }
                next += 1
                item.name = "item-\(next)"
                item.createdAt = epoch.addingTimeInterval(Double(next))
                item.done = next % 2 == 0
                item.weight = Int32(next % 1000)
                return false
            })
            let result = try await container.newBackgroundContext().execute(insert)
            precondition(result.count == rows)
        }, raw: {
            try rawCopy(raw, rows: rows)
        }),
        Workload(name: "W1 batch insert \(rows.formatted()) (dictionaries)", prepare: resetEmpty, client: {
            var next = 0
            let insert = try BatchInsertRequest(entityName: "BenchItem", dictionaryHandler: { object in
                guard next < rows else { return true }
                next += 1
                object["name"] = "item-\(next)"
                object["createdAt"] = epoch.addingTimeInterval(Double(next))
                object["done"] = next % 2 == 0
                object["weight"] = Int32(next % 1000)
                return false
            })
            let result = try await container.newBackgroundContext().execute(insert)
            precondition(result.count == rows)
        }, raw: {
            try rawCopy(raw, rows: rows)
        }),
        Workload(name: "W4 naive: fetch, change, save \(rows.formatted())", prepare: fullTable, client: {
            let context = container.newBackgroundContext()
            try await context.perform {
                var request = FetchRequest<BenchItem>()
                request.returnsObjectsAsFaults = false
                for item in try context.fetch(request) { item.weight += 1 }
                try context.save()
                context.reset()
            }
        }, raw: {
            try rawUpdateReturningIDs(raw, rows: rows)
        }),
        Workload(name: "W1 save \(inserts.formatted()) inserted objects (B: keys + COPY)", prepare: resetEmpty, client: {
            try await saveNewItems(container, count: inserts)
        }, raw: {
            try rawCopyWithKeys(raw, rows: inserts)
        }),
        // The floor of any object graph that uniques new objects, raw against raw.
        Workload(name: "W1 floor: raw, a class instance per new row in a key map (B: keys + COPY)", prepare: resetEmpty, client: {
            try rawSaveMappedObjects(raw, rows: inserts)
        }, raw: {
            try rawCopyWithKeys(raw, rows: inserts)
        }),
        Workload(name: "W1 extra: the same save (B: multi-row INSERT)", prepare: resetEmpty, client: {
            try await saveNewItems(container, count: inserts)
        }, raw: {
            try rawMultiRowInsert(raw, rows: inserts)
        }),
        Workload(name: "W6 save \(updates.formatted()) updated objects (B: set-based)", prepare: prepareUpdates, client: {
            try await saveUpdatedItems(fetched)
        }, raw: {
            try rawSetBasedUpdate(raw, keys: fetched.keys, versions: fetched.versions)
        }, pairsPerRun: w6PairsPerRun),
        Workload(name: "W6 extra: the same save (B: pipelined per row)", prepare: prepareUpdates, client: {
            try await saveUpdatedItems(fetched)
        }, raw: {
            try rawPipelinedUpdates(raw, ids: fetched.keys)
        }),
    ]
}

/// W1's client side: `count` new items inserted in a context and saved at once.
func saveNewItems(_ container: PersistentContainer, count: Int) async throws {
    let context = container.newBackgroundContext()
    try await context.perform {
        for i in 1...count {
            let item = BenchItem(context: context)
            item.name = "item-\(i)"
            item.createdAt = epoch.addingTimeInterval(Double(i))
            item.done = i % 2 == 0
            item.weight = Int32(i % 1000)
        }
        try context.save()
    }
}

/// W6's client side: every fetched item gets a new weight, saved at once.
func saveUpdatedItems(_ fetched: FetchedObjects) async throws {
    guard let context = fetched.context else { throw BenchmarkError("W6: no fetched objects") }
    try await context.perform {
        for item in fetched.items {
            item.weight = Int32((item.objectID.primaryKey ?? 0) % 1000 + 1)
        }
        try context.save()
    }
}
