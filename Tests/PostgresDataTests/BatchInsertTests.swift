import Foundation
import PostgresData
import Synchronization
import Testing

@Entity final class Product: ManagedObject {
    @Attribute(.unique) var sku: String
    var title: String = ""
    @Attribute(minValue: 0) var price = 0
    var stock = 0
}

/// Batch inserts: validated first, COPY or unnest, conflicts as asked.
@Suite struct BatchInsertTests {
    @Test func dictionariesGetDefaultsAndIDs() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        var insert = try BatchInsertRequest(entityName: "Item", objects: [["name": "milk", "weight": 2, "notes": nil], ["name": "bread", "done": true]])
        insert.resultType = .objectIDs
        let result = try await context.execute(insert)
        #expect(result.count == 2 && result.objectIDs.count == 2)
        let names = try await context.perform { try result.objectIDs.map { (try context.existingObject(with: $0) as! Item).name } }
        #expect(names == ["milk", "bread"])
        #expect(try await container.rawStrings("SELECT name || ':' || weight || ':' || done FROM item ORDER BY id") == ["milk:2:false", "bread:0:true"])
        // Many rows, nothing to return: one binary COPY.
        let many = try BatchInsertRequest(entityName: "Item", objects: (0..<2_000).map { ["name": "n\($0)", "weight": $0 % 1000] })
        #expect(try await context.execute(many).count == 2_000)
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [2_002])
    }

    struct NewItem: Encodable {
        var name: String
        var weight: Int
        var createdAt: Date
        var notes: String?
    }

    @Test func encodableValuesAndAHandler() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        let date = Date(timeIntervalSince1970: 1_700_000_000)
        var fromValues = try BatchInsertRequest(entityName: "Item", values: [NewItem(name: "a", weight: 1, createdAt: date, notes: "x"),
                                                                             NewItem(name: "b", weight: 2, createdAt: date, notes: nil)])
        fromValues.resultType = .count
        #expect(try await context.execute(fromValues).count == 2)
        var produced = 0
        let fromHandler = try BatchInsertRequest(entityName: "Item", dictionaryHandler: { object in
            guard produced < 3 else { return true }
            object["name"] = "h\(produced)"
            produced += 1
            return false
        })
        _ = try await context.execute(fromHandler)
        #expect(try await container.rawStrings("SELECT name FROM item ORDER BY name") == ["a", "b", "h0", "h1", "h2"])
        #expect(try await container.rawIntegers("SELECT extract(epoch FROM created_at)::bigint FROM item WHERE name = 'a'") == [1_700_000_000])
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE notes IS NULL") == [4])
    }

    @Test func aManagedObjectHandlerFillsOneReusedObject() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        var filled = 0
        let insert = try BatchInsertRequest(entity: Item.self, managedObjectHandler: { item in
            guard filled < 1_500 else { return true }
            #expect(item.weight == 0 && item.notes == nil)      // reset to the defaults each time
            item.name = "o\(filled)"
            item.weight = filled % 1000
            if filled == 7 { item.notes = "seven" }
            filled += 1
            return false
        })
        #expect(try await context.execute(insert).count == 1_500)
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE notes IS NOT NULL") == [1])
        #expect(try await container.rawIntegers("SELECT sum(weight)::bigint FROM item") == [Int64((0..<1_500).reduce(0) { $0 + $1 % 1000 })])
        // A row is checked as the handler returns it: the insert stops at it and writes nothing.
        var calls = 0
        let invalidInsert = try BatchInsertRequest(entity: Item.self, managedObjectHandler: { item in
            item.name = "ok"
            if calls == 4_000 { item.name = "" }               // shorter than the minimum length
            calls += 1
            return calls > 5_000
        })
        let invalid = await captureDataError { _ = try await context.execute(invalidInsert) }
        #expect("\(invalid!)".contains("row 4000: name has length 0, shorter than the minimum 1; nothing was written"), "\(invalid!)")
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [1_500])
    }

    @Test func aManagedObjectHandlerCanReturnIDsAndUpsert() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        func products(_ skus: [String], price: Int) throws -> BatchInsertRequest {
            var remaining = skus[...]
            return try BatchInsertRequest(entity: Product.self, managedObjectHandler: { product in
                guard let sku = remaining.popFirst() else { return true }
                product.sku = sku
                product.title = "title \(sku)"
                product.price = price
                return false
            })
        }
        var first = try products(["A", "B", "C"], price: 1)
        first.resultType = .objectIDs
        let ids = try await context.execute(first).objectIDs
        #expect(ids.count == 3 && Set(ids.compactMap(\.primaryKey)).count == 3)
        #expect(try await container.rawIntegers("SELECT id FROM product ORDER BY id") == ids.compactMap(\.primaryKey).sorted())

        // The handler runs at each execution (here it has nothing left to give the second time).
        var again = try products(["B", "C", "D"], price: 9)
        let duplicate = await captureDataError { _ = try await context.execute(again) }
        #expect(duplicate?.sqlState == "23505")
        again.onConflict = .update()
        #expect(try await context.execute(again).count == 0)
        var upsert = try products(["B", "C", "D"], price: 9)
        upsert.onConflict = .update()
        upsert.resultType = .count
        #expect(try await context.execute(upsert).count == 3)
        #expect(try await container.rawIntegers("SELECT price::bigint FROM product ORDER BY sku") == [1, 9, 9, 9])
        var ignore = try products(["B", "C", "D"], price: 5)
        ignore.onConflict = .ignore
        #expect(try await context.execute(ignore).count == 0)
        // The staging table went with its transaction.
        #expect(try await container.rawIntegers("SELECT count(*) FROM pg_class WHERE relname = 'postgres_data_batch_insert'") == [0])
    }

    @Test func badRowsAreRefusedBeforeSending() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        let tooHeavy = await captureDataError { _ = try await context.execute(try BatchInsertRequest(entityName: "Item", objects: [["name": "ok"], ["name": "x", "weight": 2_000]])) }
        #expect("\(tooHeavy!)".contains("row 1: weight is 2000.0, above the maximum 1000.0"))
        let missing = await captureDataError { _ = try await context.execute(try BatchInsertRequest(entityName: "Item", objects: [["weight": 1]])) }
        #expect("\(missing!)".contains("row 0: name is required and has no default"))
        let unknown = await captureDataError { _ = try await context.execute(try BatchInsertRequest(entityName: "Item", objects: [["nmae": "x"]])) }
        #expect("\(unknown!)".contains("Did you mean \"name\""))
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [0])
    }

    /// An integer too big for a 16- or 32-bit attribute is refused, naming row and key —
    /// before, it was truncated silently on its way into COPY.
    @Test func integersOutOfTheAttributesRangeAreRefused() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        var row = 0
        let handler = try BatchInsertRequest(entityName: "Profile", dictionaryHandler: { object in
            guard row < 3 else { return true }
            object["id32"] = row == 2 ? Int(1) << 40 : row
            row += 1
            return false
        })
        let tooBig = await captureDataError { _ = try await context.execute(handler) }
        #expect("\(tooBig!)".contains("row 2: id32 is 1099511627776, out of the range of integer32"), "\(tooBig!)")
        let small = await captureDataError { _ = try await context.execute(try BatchInsertRequest(entityName: "Profile", objects: [["id16": 40_000]])) }
        #expect("\(small!)".contains("row 0: id16 is 40000, out of the range of integer16"))
        #expect(try await container.rawIntegers("SELECT count(*) FROM profile") == [0])
    }

    /// A dictionary handler whose rows supply different keys: defaults where a row leaves a
    /// key out, and the same rows whether they go through COPY or come back as IDs.
    @Test func aDictionaryHandlerWithRowsOfDifferentKeys() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        for wantsIDs in [false, true] {
            var row = 0
            var insert = try BatchInsertRequest(entityName: "Item", dictionaryHandler: { object in
                guard row < 2_000 else { return true }
                object["name"] = "r\(row)"
                if row % 3 == 0 { object["weight"] = row % 1000 }
                if row % 5 == 0 { object["notes"] = "five" }
                row += 1
                return false
            })
            if wantsIDs { insert.resultType = .objectIDs }
            let result = try await context.execute(insert)
            #expect(result.count == 2_000 && result.objectIDs.count == (wantsIDs ? 2_000 : 0))
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE weight = 0 AND name = 'r1'") == [2])
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE notes = 'five'") == [800])
        #expect(try await container.rawIntegers("SELECT sum(weight)::int8 FROM item WHERE name = 'r999'") == [1998])
    }

    /// A dictionary handler runs when the request executes, as Core Data's does, and its rows
    /// stream into COPY: a row that breaks the model after chunks of rows were sent aborts
    /// the COPY, and no row is written.
    @Test func aDictionaryHandlerStreamsAtExecutionAndABadRowWritesNothing() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        var calls = 0
        let insert = try BatchInsertRequest(entityName: "Item", dictionaryHandler: { object in
            calls += 1
            guard calls <= 6_000 else { return true }
            object["name"] = "streamed-\(calls)"
            object["weight"] = calls == 5_000 ? "heavy" as any Sendable : calls % 1000
            return false
        })
        let refused = await captureDataError { _ = try await context.execute(insert) }
        #expect("\(refused!)".contains("batch insert of Item, row 4999: weight"), "\(refused!)")
        #expect("\(refused!)".contains("nothing was written"), "\(refused!)")
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [0])
        #expect(try await container.rawIntegers("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'") == [0])
    }

    /// Two executions of one request (or of copies of it) at the same time: the second fails
    /// at once rather than calling the handler concurrently; executed again afterwards, the
    /// request calls its handler again.
    @Test func aDictionaryHandlerRunsOnceAtATime() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        final class Gate: Sendable {
            let started = Atomic<Bool>(false)
            let released = Atomic<Bool>(false)
        }
        let gate = Gate()
        var row = 0
        var handled = 0
        let insert = try BatchInsertRequest(entityName: "Item", dictionaryHandler: { object in
            handled += 1
            if row == 0 && !gate.released.load(ordering: .acquiring) {
                gate.started.store(true, ordering: .releasing)
                let deadline = ContinuousClock.now + .seconds(30)
                while !gate.released.load(ordering: .acquiring) && ContinuousClock.now < deadline { usleep(1_000) }
            }
            guard row < 10 else {
                row = 0
                return true
            }
            object["name"] = "once-\(row)"
            row += 1
            return false
        })
        let copy = insert
        let first = Task { try await context.execute(insert).count }
        while !gate.started.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(5)) }
        let busy = await captureDataError { _ = try await context.execute(copy) }
        gate.released.store(true, ordering: .releasing)
        #expect("\(busy!)".contains("already running in another execution"), "\(String(describing: busy))")
        #expect(try await first.value == 10)
        #expect(try await context.execute(copy).count == 10)
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE name LIKE 'once-%'") == [20])
    }

    @Test func conflictsFailIgnoreOrUpdateOnlyTheSuppliedKeys() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        _ = try await context.execute(try BatchInsertRequest(entityName: "Product", objects: [
            ["sku": "A", "title": "Apple", "price": 10, "stock": 5], ["sku": "B", "title": "Bean", "price": 20, "stock": 7],
        ]))
        let clash = await captureDataError { _ = try await context.execute(try BatchInsertRequest(entityName: "Product", objects: [["sku": "C", "title": "Corn"], ["sku": "A", "title": "Again"]])) }
        guard case .constraintViolation(let constraint, _, _)? = clash else {
            Issue.record("expected a uniqueness violation, got \(String(describing: clash))")
            return
        }
        #expect(constraint?.keys == ["sku"] && clash?.sqlState == "23505")
        #expect(try await container.rawIntegers("SELECT count(*) FROM product") == [2])

        var ignore = try BatchInsertRequest(entityName: "Product", objects: [["sku": "C", "title": "Corn"], ["sku": "A", "title": "Again"]])
        ignore.onConflict = .ignore
        ignore.resultType = .count
        #expect(try await context.execute(ignore).count == 1)

        var upsert = try BatchInsertRequest(entityName: "Product", objects: [["sku": "A", "price": 11], ["sku": "D", "title": "Date", "price": 4]])
        upsert.onConflict = .update(conflictKeys: ["sku"])
        upsert.resultType = .objectIDs
        #expect(try await context.execute(upsert).count == 2)
        #expect(try await container.rawStrings("SELECT sku || ':' || title || ':' || price || ':' || stock FROM product ORDER BY sku")
            == ["A:Apple:11:5", "B:Bean:20:7", "C:Corn:0:0", "D:Date:4:0"])
        var wrongKeys = upsert
        wrongKeys.onConflict = .update(conflictKeys: ["title"])
        let noConstraint = await captureDataError { _ = try await context.execute(wrongKeys) }
        #expect("\(noConstraint!)".contains("no uniqueness constraint on title"))
    }
}
