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
    /// A fetch's result array, freed untimed like its context.
    var results: Any?
}

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
        let context = container.newBackgroundContext()
        // The fetched objects are W6's input: they stay registered until it reads them.
        context.retainsRegisteredObjects = true
        try await context.perform {
            var request = FetchRequest<BenchItem>()
            request.fetchLimit = updates
            let count = try context.fetch(request).count
            precondition(count == updates)
        }
        fetched.context = context
    }
    let fullTable: () async throws -> Void = {
        fetched.context = nil
        fetched.results = nil
        let count = try await connection.query("SELECT count(*) FROM items")[0].decode(Int64.self, at: 0)
        if count != rows { try await fillItems(connection, rows: rows) }
    }
    /// Fetches through a fresh context, kept with the result until the next run so their
    /// teardown is not timed (the raw side's result is freed inside its run: the comparison
    /// favours raw slightly).
    func fetchWorkload<Result>(_ name: String, _ body: @escaping @Sendable (ManagedObjectContext) throws -> [Result]) -> Workload {
        Workload(name: name, prepare: fullTable, client: {
            let context = container.newBackgroundContext()
            let count = try await context.perform {
                let results = try body(context)
                fetched.results = results
                return results.count
            }
            precondition(count == rows)
            fetched.context = context
        }, raw: {
            try rawFetchStructs(raw, rows: rows)
        })
    }
    func asynchronousFetch(_ name: String, rawWithVersions: Bool) -> Workload {
        Workload(name: name, prepare: fullTable, client: {
            let context = container.newBackgroundContext()
            var request = FetchRequest<BenchItem>()
            request.fetchBatchSize = 10_000
            let asynchronous = AsynchronousFetchRequest(fetchRequest: request)
            let result = try await context.perform { () throws in try context.execute(asynchronous) }
            try await result.wait()
            precondition(result.progress.completedUnitCount == Int64(rows))
            fetched.context = context
        }, raw: {
            try rawCursorStructs(raw, rows: rows, withVersions: rawWithVersions)
        })
    }
    return [
        fetchWorkload("W2 fetch \(rows.formatted()) as objects") { context in
            var request = FetchRequest<BenchItem>()
            request.returnsObjectsAsFaults = false
            return try context.fetch(request)
        },
        fetchWorkload("W2 fetch \(rows.formatted()) as faults (default)") { context in
            try context.fetch(FetchRequest<BenchItem>())
        },
        fetchWorkload("W2 fetch \(rows.formatted()) object IDs") { context in
            try context.fetch(FetchRequest<ManagedObjectID>(entityName: "BenchItem"))
        },
        fetchWorkload("W2 fetch \(rows.formatted()) as dictionaries") { context in
            try context.fetch(FetchRequest<FetchedDictionary>(entityName: "BenchItem"))
        },
        fetchWorkload("W2 fetch \(rows.formatted()) as Swift dictionaries") { context in
            try context.fetch(FetchRequest<[String: AttributeValue]>(entityName: "BenchItem"))
        },
        asynchronousFetch("W3 asynchronous fetch \(rows.formatted()), batches of 10,000", rawWithVersions: false),
        // The same fetch against a raw loop that also reads the row versions PostgresData needs.
        asynchronousFetch("W3 asynchronous fetch vs cursor loop with xmin", rawWithVersions: true),
        Workload(name: "W3 walk \(rows.formatted()) in batches of 10,000, released", prepare: fullTable, client: {
            let context = container.newBackgroundContext()
            var request = FetchRequest<BenchItem>()
            request.fetchBatchSize = 10_000
            request.returnsObjectsAsFaults = false
            let walked = Counter()
            try await context.enumerateBatches(of: request) { items in walked.add(items.count) }
            precondition(walked.value == rows)
        }, raw: {
            try rawCursorStructs(raw, rows: rows)
        }),
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
            }
            fetched.context = context
        }, raw: {
            try rawUpdateReturningIDs(raw, rows: rows)
        }),
        Workload(name: "W1 save \(inserts.formatted()) inserted objects", prepare: resetEmpty, client: {
            try await saveNewItems(container, count: inserts)
        }, raw: {
            try rawMultiRowInsert(raw, rows: inserts)
        }),
        Workload(name: "W6 save \(updates.formatted()) updated objects", prepare: prepareUpdates, client: {
            try await saveUpdatedItems(fetched.context!)
        }, raw: {
            try rawPipelinedUpdates(raw, ids: (1...Int64(updates)).map { $0 })
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

/// W6's client side: every item registered in `context` gets a new weight, saved at once.
func saveUpdatedItems(_ context: ManagedObjectContext) async throws {
    try await context.perform {
        for object in context.registeredObjects {
            let item = object as! BenchItem
            item.weight = Int32(item.objectID.primaryKey! % 1000 + 1)
        }
        try context.save()
    }
}
