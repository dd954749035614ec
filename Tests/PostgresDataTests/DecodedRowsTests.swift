import Foundation
import PostgresData
import PostgresDataTesting
import Testing

@Entity final class ColumnSample: ManagedObject {
    var number = 0
    var small: Int16?
    var medium: Int32?
    var large: Int?
    var ratio: Double?
    var fraction: Float?
    var flag: Bool?
    var at: Date?
    var label: String?
    var token: UUID?
    var blob: Data?
    var price: Decimal?
    var owner: ColumnSampleOwner?
}

@Entity final class ColumnSampleOwner: ManagedObject {
    var name = ""
    @Relationship(inverse: \ColumnSample.owner) var samples: Set<ColumnSample>
}

/// Attributes of the types whose getters read a fetched object's column directly.
@Entity final class RequiredColumnSample: ManagedObject {
    var number = 0
    var small: Int16 = 0
    var medium: Int32 = 0
    var huge: Int64 = 0
    var ratio: Double = 0
    var flag = false
    var at = Date(timeIntervalSinceReferenceDate: 0)
    var label = ""

    /// Every attribute, as read through the getters.
    var reading: [String] {
        ["\(number)", "\(small)", "\(medium)", "\(huge)", "\(ratio)", "\(flag)", "\(at.timeIntervalSinceReferenceDate)", label]
    }

    /// What row `number` holds.
    static func expected(_ number: Int) -> [String] {
        ["\(number)", "\(Int16(number) * (number % 2 == 0 ? -1 : 1))", "\(Int32(number) << 12)", "\(Int64(number) * 10_000_000_019)",
         "\(Double(number) / 8)", "\(number % 3 == 1)", "\(Double(number) * 86_400.5)", number % 2 == 0 ? "r\(number)" : "a label long enough for the heap, row \(number)"]
    }
}

/// Fetched rows keep their values in typed columns (``DecodedRows``): every kind of column,
/// with and without NULLs, over more rows than one chunk holds, reads back as it was saved.
@Suite struct DecodedRowsTests {
    let model = ManagedObjectModel(ColumnSample.self, ColumnSampleOwner.self)
    static let rows = 300

    /// What row `number` holds, each column NULL in some rows and not in others.
    struct Expected: Equatable {
        var small: Int16?, medium: Int32?, large: Int?, ratio: Double?, fraction: Float?, flag: Bool?
        var at: Date?, label: String?, token: UUID?, blob: Data?, price: Decimal?, owner: String?

        init(_ number: Int) {
            small = number % 7 == 0 ? nil : Int16(number) * (number % 2 == 0 ? -1 : 1)
            medium = number % 7 == 1 ? nil : Int32(number) << 12
            large = number % 7 == 2 ? nil : number * 1_000_000_007
            ratio = number % 7 == 3 ? nil : Double(number) / 8
            fraction = number % 7 == 4 ? nil : Float(number) / 4
            flag = number % 3 == 0 ? nil : number % 3 == 1
            at = number % 7 == 5 ? nil : number % 11 == 0 ? .distantFuture : number % 13 == 0 ? .distantPast
                : Date(timeIntervalSinceReferenceDate: Double(number) * 86_400.5)
            label = number % 7 == 6 ? nil : number % 2 == 0 ? "r\(number)" : "a label long enough for the heap, row \(number)"
            token = number % 5 == 0 ? nil : UUID(uuidString: "00000000-0000-0000-0000-\(String(repeating: "0", count: 12 - String(number).count))\(number)")
            blob = number % 4 == 0 ? nil : Data([UInt8(number % 256), 1, 2])
            price = number % 6 == 0 ? nil : Decimal(number) / 100
            owner = number % 3 == 0 ? nil : number % 2 == 0 ? "even" : "odd"
        }

        init(_ sample: ColumnSample) {
            small = sample.small; medium = sample.medium; large = sample.large; ratio = sample.ratio
            fraction = sample.fraction; flag = sample.flag; at = sample.at; label = sample.label
            token = sample.token; blob = sample.blob; price = sample.price; owner = sample.owner?.name
        }
    }

    /// A database holding the rows, and a second container on it whose coordinator has never
    /// seen them: its fetches decode every value from the server's rows.
    func savedRows() async throws -> PersistentContainer {
        let configuration = try await TestDatabase.fresh(prefix: "pd_columns")
        let writer = PersistentContainer(name: "Columns", model: model)
        try await writer.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        try await writer.performBackgroundTask { context in
            let owners = ["even", "odd"].map { name in
                let owner = ColumnSampleOwner(context: context)
                owner.name = name
                return owner
            }
            for number in 0..<Self.rows {
                let expected = Expected(number)
                let sample = ColumnSample(context: context)
                sample.number = number
                sample.small = expected.small; sample.medium = expected.medium; sample.large = expected.large
                sample.ratio = expected.ratio; sample.fraction = expected.fraction; sample.flag = expected.flag
                sample.at = expected.at; sample.label = expected.label; sample.token = expected.token
                sample.blob = expected.blob; sample.price = expected.price
                sample.owner = expected.owner.map { $0 == "even" ? owners[0] : owners[1] }
            }
            try context.save()
        }
        let reader = PersistentContainer(name: "Columns", model: model)
        try await reader.loadPersistentStores(configuration: configuration)
        return reader
    }

    static func mismatches(_ samples: [ColumnSample]) -> [String] {
        samples.enumerated().compactMap { position, sample in
            let read = Expected(sample)
            return sample.number == position && read == Expected(position) ? nil : "row \(position): \(read)"
        }
    }

    @Test func objectsReadEveryColumnKindWithAndWithoutNULL() async throws {
        let container = try await savedRows()
        for asFaults in [false, true] {
            let mismatches = try await container.performBackgroundTask { context in
                var request = FetchRequest<ColumnSample>(sortDescriptors: [FetchSortDescriptor(key: "number")])
                request.returnsObjectsAsFaults = asFaults
                let samples = try context.fetch(request)
                try #require(samples.count == Self.rows)
                return Self.mismatches(samples)
            }
            #expect(mismatches.isEmpty, "as faults: \(asFaults): \(mismatches.prefix(3))")
        }
    }

    @Test func anAsynchronousFetchReadsEveryColumnKind() async throws {
        let container = try await savedRows()
        let context = container.newBackgroundContext()
        var request = FetchRequest<ColumnSample>(sortDescriptors: [FetchSortDescriptor(key: "number")])
        request.fetchBatchSize = 100
        let asynchronous = AsynchronousFetchRequest(fetchRequest: request)
        let result = try await context.perform { () throws in try context.execute(asynchronous) }
        try await result.wait()
        let mismatches = await context.perform { Self.mismatches(result.finalResult ?? []) }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(3))")
        #expect(await context.perform { result.finalResult?.count } == Self.rows)
    }

    /// The getters of required strings, integers, doubles, booleans and dates read a fetched
    /// object's column straight; an object's own values (changed, or inserted) and faults read
    /// as before.
    @Test func requiredAttributesReadFromTheirColumnsAsFromTheirValues() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_columns")
        let model = ManagedObjectModel(RequiredColumnSample.self)
        let writer = PersistentContainer(name: "Required", model: model)
        try await writer.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        let inserted = try await writer.performBackgroundTask { context in
            let samples = (0..<Self.rows).map { number in
                let sample = RequiredColumnSample(context: context)
                let expected = RequiredColumnSample.expected(number)
                sample.number = number
                sample.small = Int16(expected[1])!; sample.medium = Int32(expected[2])!; sample.huge = Int64(expected[3])!
                sample.ratio = Double(expected[4])!; sample.flag = expected[5] == "true"
                sample.at = Date(timeIntervalSinceReferenceDate: Double(expected[6])!); sample.label = expected[7]
                return sample
            }
            try context.save()
            return samples.enumerated().filter { $1.reading != RequiredColumnSample.expected($0) }.count
        }
        #expect(inserted == 0)
        let reader = PersistentContainer(name: "Required", model: model)
        try await reader.loadPersistentStores(configuration: configuration)
        for asFaults in [false, true] {
            let mismatches = try await reader.performBackgroundTask { context in
                var request = FetchRequest<RequiredColumnSample>(sortDescriptors: [FetchSortDescriptor(key: "number")])
                request.returnsObjectsAsFaults = asFaults
                let samples = try context.fetch(request)
                try #require(samples.count == Self.rows)
                var mismatches = samples.enumerated().compactMap { position, sample in
                    sample.reading == RequiredColumnSample.expected(position) ? nil : "row \(position): \(sample.reading)"
                }
                // A change gives the object values of its own: the changed one reads as set,
                // the others as fetched.
                let changed = samples[7]
                changed.label = "changed"
                changed.huge = -1
                var expected = RequiredColumnSample.expected(7)
                expected[3] = "-1"
                expected[7] = "changed"
                if changed.reading != expected { mismatches.append("changed: \(changed.reading)") }
                return mismatches
            }
            let count = mismatches.count
            #expect(count == 0, "as faults: \(asFaults): \(mismatches.prefix(3))")
        }
    }

    /// A fetched object's first change takes its values from the shared row once: setting a
    /// value it already has changes nothing, an undo puts the committed value back, a value
    /// set back to the committed one leaves the object unchanged, and the save writes the rest.
    @Test func aFetchedObjectsFirstChangeIsTrackedUndoneAndSaved() async throws {
        let container = try await savedRows()
        let (unchanged, undone, reverted, saved) = try await container.performBackgroundTask { context in
            var request = FetchRequest<ColumnSample>(sortDescriptors: [FetchSortDescriptor(key: "number")])
            request.returnsObjectsAsFaults = false
            let samples = try context.fetch(request)
            let (first, second, third) = (samples[1], samples[2], samples[3])
            first.label = Expected(1).label
            first.medium = Expected(1).medium
            let unchanged = !first.hasChanges && !context.hasChanges

            context.undoManager = UndoManager()
            second.label = "undone"
            context.processPendingChanges()
            context.undo()
            let undone = second.label == Expected(2).label && !second.hasChanges && !context.hasChanges

            third.ratio = 1
            let changed = third.hasChanges && context.updatedObjects == [third]
            third.ratio = Expected(3).ratio
            let reverted = changed && !third.hasChanges && context.updatedObjects.isEmpty

            let fourth = samples[4]
            fourth.label = "saved"
            fourth.flag = nil
            try context.save()
            return (unchanged, undone, reverted, context.hasChanges)
        }
        #expect(unchanged && undone && reverted && !saved)
        #expect(try await container.rawStrings("SELECT label || ' ' || coalesce(flag::text, 'null') FROM column_sample WHERE number IN (2, 4) ORDER BY number")
                == [Expected(2).label.map { "\($0) false" } ?? "", "saved null"])
    }

    @Test func aChangedObjectStillReportsItsCommittedValues() async throws {
        let container = try await savedRows()
        try await container.performBackgroundTask { context in
            var request = FetchRequest<ColumnSample>(sortDescriptors: [FetchSortDescriptor(key: "number")])
            request.returnsObjectsAsFaults = false
            let sample = try #require(try context.fetch(request).last)
            let before = Expected(Self.rows - 1)
            sample.label = "changed"
            sample.ratio = nil
            #expect(sample.label == "changed" && sample.ratio == nil && sample.large == before.large)
            let committed = sample.committedValues(forKeys: ["label", "ratio", "large"])
            #expect(committed["label"] as? String == before.label)
            #expect(committed["ratio"] as? Double == before.ratio)
            #expect(Set(sample.changedValues().keys) == ["label", "ratio"])
        }
    }
}
