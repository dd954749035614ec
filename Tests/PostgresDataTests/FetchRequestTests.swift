import Foundation
import PostgresData
import Testing

@Entity final class Person: ManagedObject {
    var name: String
    var age: Int
}

/// Fetch request options beyond predicates: pending changes, batches, faults, dictionaries,
/// grouping, prefetching, diacritics.
@Suite struct FetchRequestTests {
    func items(_ context: ManagedObjectContext, _ format: String = "TRUEPREDICATE", _ arguments: Any?...,
               limit: Int = 0, offset: Int = 0, sort: [FetchSortDescriptor] = [FetchSortDescriptor(key: "name")]) throws -> [String] {
        var request = FetchRequest<Item>(predicate: try FetchPredicate(format: format, argumentArray: arguments), sortDescriptors: sort)
        request.fetchLimit = limit
        request.fetchOffset = offset
        return try context.fetch(request).map(\.name)
    }

    /// A fetch of more rows than one batch of decoding (5,000) and one chunk of values (256):
    /// every object, filled or a fault fired later, holds its own row's values, whichever
    /// chunk and batch they were decoded in.
    @Test func everyObjectOfALargeFetchHoldsItsOwnRow() async throws {
        let container = try await makeContainer()
        try await container.rawExecute("""
            INSERT INTO item (name, created_at, done, weight, notes)
            SELECT 'item ' || i, to_timestamp(i), i % 3 = 0, i % 1000, CASE WHEN i % 2 = 0 THEN 'even' END
            FROM generate_series(1, 12345) AS i
            """)
        for asFaults in [false, true] {
            let context = container.newBackgroundContext()
            let mismatches = try await context.perform { () throws -> [String] in
                var request = FetchRequest<Item>()
                request.returnsObjectsAsFaults = asFaults
                let items = try context.fetch(request)
                var mismatches: [String] = []
                if items.count != 12345 { mismatches.append("\(items.count) objects") }
                if Set(items.map(\.objectID)).count != items.count { mismatches.append("objects share IDs") }
                for item in items {
                    guard let number = Int(item.name.dropFirst(5)) else {
                        mismatches.append(item.name)
                        continue
                    }
                    let expected = (number % 1000, number % 3 == 0, number % 2 == 0 ? "even" : nil, Double(number))
                    if (item.weight, item.done, item.notes, item.createdAt.timeIntervalSince1970) != expected || item.rowVersion == nil {
                        mismatches.append("\(item.name): \(item.weight), \(item.done), \(item.notes ?? "nil"), \(item.createdAt)")
                    }
                }
                context.reset()
                return mismatches
            }
            #expect(mismatches.isEmpty, "returnsObjectsAsFaults \(asFaults): \(mismatches.prefix(5))")
        }
    }

    /// The seeds' scenario: IDs found in a private context with batches of 20, used in the main context.
    @Test func seedPeopleByAgeAsIDsThenMaterialisedOnTheMainQueue() async throws {
        let container = try await makeContainer()
        try await container.performBackgroundTask { context in
            for index in 0..<1_000 {
                let person = Person(context: context)
                person.name = "Person \(index)"
                person.age = index
            }
            try context.save()
        }
        let ids = try await container.performBackgroundTask { context in
            var request = FetchRequest<ManagedObjectID>(entityName: "Person",
                                                        predicate: try FetchPredicate(format: "(age >= 100) AND (age <= 200)"),
                                                        sortDescriptors: [FetchSortDescriptor(key: "age")])
            request.fetchBatchSize = 20
            return try context.fetch(request)
        }
        #expect(ids.count == 101)
        let view = container.viewContext
        let names = try await view.perform {
            try ids.map { (try view.existingObject(with: $0) as! Person).name }
        }
        #expect(names.first == "Person 100" && names.last == "Person 200")
        #expect(Set(names).count == 101)
    }

    @Test func pendingInsertsUpdatesAndDeletesAreReflected() async throws {
        let container = try await makeContainer()
        for name in ["a", "b", "c", "d", "e"] { _ = try await container.saveItem(named: name) }
        let context = container.newBackgroundContext()
        try await context.perform { () throws in
            let all = try context.fetch(FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")]))
            all[1].name = "zz"                      // b moves to the end
            all[2].weight = 50                      // c stops matching weight < 10
            context.delete(all[3])                  // d leaves
            let inserted = Item(context: context)   // a new one in the middle
            inserted.name = "bb"
            #expect(try items(context) == ["a", "bb", "c", "e", "zz"])
            #expect(try items(context, "weight < 10") == ["a", "bb", "e", "zz"])
            #expect(try items(context, "weight < 10", limit: 2, offset: 1) == ["bb", "e"])
            #expect(try context.count(for: FetchRequest<Item>(predicate: try FetchPredicate(format: "weight < 10"))) == 4)
            #expect(try context.count(for: FetchRequest<Item>(entityName: "Item")) == 5)
            let ids = try context.fetch(FetchRequest<ManagedObjectID>(entityName: "Item", sortDescriptors: [FetchSortDescriptor(key: "name")]))
            #expect(ids.count == 5 && ids[1] == inserted.objectID && ids[1].isTemporaryID)
            var storeOnly = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])
            storeOnly.includesPendingChanges = false
            // The store's rows, with the context's current values for the objects it holds.
            #expect(try context.fetch(storeOnly).map(\.name) == ["a", "zz", "c", "d", "e"])
            #expect(try items(context, "name BEGINSWITH 'b'") == ["bb"])
        }
        // Nothing was saved.
        #expect(try await container.rawStrings("SELECT name FROM item ORDER BY name") == ["a", "b", "c", "d", "e"])
    }

    @Test func unsavedRelatedObjectsMatchInMemory() async throws {
        let container = try await makeContainer()
        _ = try await container.saveItem(named: "stored")
        let context = container.newBackgroundContext()
        try await context.perform { () throws in
            let list = TodoList(context: context)
            list.title = "new"
            let item = Item(context: context)
            item.name = "fresh"
            item.list = list
            let found = try context.fetch(FetchRequest<Item>(predicate: try FetchPredicate(format: "list == %@", list)))
            #expect(found.map(\.name) == ["fresh"])
            let lists = try context.fetch(FetchRequest<TodoList>(predicate: try FetchPredicate(format: "ANY items.name == 'fresh'")))
            #expect(lists.map(\.title) == ["new"])
        }
    }

    /// Saves items "item 000", "item 001", … weighing their number modulo `weightModulo`.
    func seedNumberedItems(_ container: PersistentContainer, count: Int, weightModulo: Int) async throws {
        try await container.performBackgroundTask { context in
            for index in 0..<count {
                let item = Item(context: context)
                item.name = String(format: "item %03d", index)
                item.weight = index % weightModulo
            }
            try context.save()
        }
    }

    @Test func batchedFetchFillsABatchPerQueryAndKeepsFewFilled() async throws {
        let container = try await makeContainer()
        try await seedNumberedItems(container, count: 250, weightModulo: 100)
        let coordinator = container.persistentStoreCoordinator
        let context = container.newBackgroundContext()
        try await context.perform { () throws in
            var request = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])
            request.fetchBatchSize = 20
            let start = coordinator.requestCount
            let all = try context.fetch(request)
            #expect(all.count == 250 && coordinator.requestCount == start + 1)
            #expect(all.allSatisfy { $0.isFault })
            #expect(all[25].name == "item 025")         // fills objects 20..<40 in one query
            #expect(coordinator.requestCount == start + 2)
            #expect(!all[20].isFault && !all[39].isFault && all[40].isFault && all[19].isFault)
            var total = 0
            for item in all { total += item.weight }    // walks the rest: one query per batch
            #expect(total == (0..<250).reduce(0) { $0 + $1 % 100 })
            #expect(coordinator.requestCount == start + 2 + 12)
            // Only the last three batches stay filled; a changed object stays whatever its batch.
            #expect(all.filter { !$0.isFault }.count == 20 + 20 + 10)
            all[0].weight = 99
            for item in all.reversed() { _ = item.name }
            #expect(!all[0].isFault && all[0].weight == 99 && all[0].hasChanges)
            #expect(all.filter { !$0.isFault }.count <= 3 * 20 + 1)
        }
    }

    @Test func objectsComeAsFaultsFilledFromTheRowCacheWithoutAQuery() async throws {
        let container = try await makeContainer()
        for name in ["a", "b"] { _ = try await container.saveItem(named: name) }
        let coordinator = container.persistentStoreCoordinator
        let context = container.newBackgroundContext()
        try await context.perform { () throws in
            let faults = try context.fetch(FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")]))
            #expect(faults.allSatisfy { $0.isFault })
            let start = coordinator.requestCount
            #expect(faults.map(\.name) == ["a", "b"] && coordinator.requestCount == start)
            var filled = FetchRequest<Item>(entityName: "Item")
            filled.returnsObjectsAsFaults = false
            context.reset()
            #expect(try context.fetch(filled).allSatisfy { !$0.isFault })
            var bare = FetchRequest<Item>(entityName: "Item")
            bare.includesPropertyValues = false
            context.reset()
            let plain = try context.fetch(bare)
            let before = coordinator.requestCount
            _ = plain[0].name
            #expect(coordinator.requestCount == before + 1)
        }
    }

    /// Fetched objects read their values from arrays shared by a few hundred rows: a change,
    /// a rollback or a refresh of one touches no other object and no committed value.
    @Test func objectsSharingDecodedRowsChangeAlone() async throws {
        let container = try await makeContainer()
        try await seedNumberedItems(container, count: 600, weightModulo: 1000)
        let context = container.newBackgroundContext()
        try await context.perform { () throws in
            var request = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])
            request.returnsObjectsAsFaults = false
            let items = try context.fetch(request)
            #expect(items.count == 600 && items.allSatisfy { !$0.isFault && !$0.hasChanges })
            for index in [0, 255, 256, 599] {
                items[index].weight += 1
                items[index].notes = "changed"
            }
            items[1].name = "renamed"
            #expect(context.updatedObjects.count == 5)
            #expect(items.enumerated().allSatisfy { index, item in
                let changed = [0, 255, 256, 599].contains(index)
                return item.weight == index + (changed ? 1 : 0) && item.notes == (changed ? "changed" : nil)
                    && item.name == (index == 1 ? "renamed" : String(format: "item %03d", index))
            })
            #expect(items[0].committedValues(forKeys: ["weight"])["weight"] as? Int == 0)
            #expect(items[1].committedValues(forKeys: ["name"])["name"] as? String == "item 001")
            #expect(Set(items[256].changedValues().keys) == ["weight", "notes"])
            items[1].name = "item 001"                 // back to the committed value: no change left
            #expect(!items[1].hasChanges)
            try context.save()
            context.refresh(items[599], mergeChanges: false)
            items[255].weight = 7
            context.rollback()
            #expect(items[255].weight == 256 && items[599].weight == 600 && items[598].weight == 598)
        }
        let stored = try await container.performBackgroundTask { context in
            try context.fetch(FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])).map(\.weight)
        }
        #expect(stored == (0..<600).map { [0, 255, 256, 599].contains($0) ? $0 + 1 : $0 })
    }

    @Test func dictionariesGroupedWithAggregates() async throws {
        let container = try await makeContainer()
        try await container.performBackgroundTask { context in
            let list = TodoList(context: context)
            list.title = "L"
            for (name, weight, done) in [("a", 1, true), ("b", 2, true), ("c", 10, false), ("d", 20, false), ("e", 30, false)] {
                let item = Item(context: context)
                item.name = name
                item.weight = weight
                item.done = done
                if done { item.list = list }
            }
            try context.save()
        }
        try await container.performBackgroundTask { context in
            var request = FetchRequest<FetchedDictionary>(entityName: "Item", sortDescriptors: [FetchSortDescriptor(key: "done")])
            request.propertiesToFetch = ["done", .expression(.count("id", as: "items")), .expression(.sum("weight", as: "total")),
                                         .expression(.average("weight", as: "mean")), .expression(.max("name", as: "last"))]
            request.propertiesToGroupBy = ["done"]
            let groups = try context.fetch(request)
            #expect(groups == [
                ["done": .boolean(false), "items": .integer(3), "total": .integer(60), "mean": .double(20), "last": .string("e")],
                ["done": .boolean(true), "items": .integer(2), "total": .integer(3), "mean": .double(1.5), "last": .string("b")],
            ])
            // havingPredicate: groups chosen by an aggregate's name, or by a grouped key path.
            var having = request
            having.havingPredicate = try FetchPredicate(format: "total > %d AND items >= 2", 10)
            #expect(try context.fetch(having).map { $0["done"] } == [.boolean(false)])
            having.havingPredicate = try FetchPredicate(format: "done == YES")
            #expect(try context.fetch(having).map { $0["total"] } == [.integer(3)])
            var ungroupedHaving = FetchRequest<FetchedDictionary>(entityName: "Item")
            ungroupedHaving.propertiesToFetch = ["name"]
            ungroupedHaving.havingPredicate = try FetchPredicate(format: "name == 'a'")
            #expect(throws: PostgresDataError.self) { try context.fetch(ungroupedHaving) }
            var byTotal = request
            byTotal.sortDescriptors = [FetchSortDescriptor(key: "total", ascending: false)]
            byTotal.fetchLimit = 1
            #expect(try context.fetch(byTotal).first?["total"] == .integer(60))

            var plain = FetchRequest<FetchedDictionary>(entityName: "Item", predicate: try FetchPredicate(format: "weight < 5"),
                                                        sortDescriptors: [FetchSortDescriptor(key: "name")])
            plain.propertiesToFetch = ["name", "notes", "list", "list.title"]
            let rows = try context.fetch(plain)
            #expect(rows.map { $0["name"] } == [.string("a"), .string("b")])
            #expect(rows[0]["list.title"] == .string("L"))
            #expect(rows[0]["notes"] == nil)                // NULL values are left out, as in Core Data
            #expect(rows.allSatisfy { $0.keys == ["name", "list", "list.title"] && $0.count == 3 })
            // The same fetch as Swift dictionaries: the same entries.
            var swift = FetchRequest<[String: AttributeValue]>(entityName: "Item", predicate: plain.predicate, sortDescriptors: plain.sortDescriptors)
            swift.propertiesToFetch = plain.propertiesToFetch
            #expect(try context.fetch(swift) == rows.map(\.dictionary))
            if case .object(let id) = rows[0]["list"] { #expect(id.entity.name == "TodoList") } else { Issue.record("list is \(String(describing: rows[0]["list"]))") }
            // The object's own ID, and its list's, as IDs (Core Data's objectID result type).
            var identified = FetchRequest<[String: AttributeValue]>(entityName: "Item", predicate: plain.predicate, sortDescriptors: plain.sortDescriptors)
            identified.propertiesToFetch = ["objectID", "list.objectID"]
            let identities = try context.fetch(identified)
            let items = try context.fetch(FetchRequest<Item>(predicate: plain.predicate, sortDescriptors: plain.sortDescriptors))
            #expect(identities.map { $0["objectID"] } == items.map { .object($0.objectID) })
            #expect(identities[0]["list.objectID"] == rows[0]["list"])

            var distinct = FetchRequest<[String: AttributeValue]>(entityName: "Item", sortDescriptors: [FetchSortDescriptor(key: "done")])
            distinct.propertiesToFetch = ["done"]
            distinct.returnsDistinctResults = true
            #expect(try context.fetch(distinct) == [["done": .boolean(false)], ["done": .boolean(true)]])

            var ungrouped = request
            ungrouped.propertiesToFetch = ["done", "name"]
            let error = capture { try context.fetch(ungrouped) }
            #expect(error.map { "\($0)" }?.contains("name is fetched but not grouped by") == true)
            #expect(try context.fetch(FetchRequest<Int>(entityName: "Item", predicate: try FetchPredicate(format: "done == YES"))) == [2])
        }
    }

    @Test func fetchedDictionariesCompareAsDictionaries() {
        let row: FetchedDictionary = ["name": .string("a"), "notes": .null, "weight": .integer(3)]
        let reordered = FetchedDictionary(["weight": .integer(3), "name": .string("a")])
        #expect(row == reordered && row.hashValue == reordered.hashValue)
        #expect(row.count == 2 && row.keys == ["name", "weight"] && row["notes"] == nil && row["unknown"] == nil)
        #expect(row != ["name": .string("a")] && row != ["name": .string("a"), "weight": .integer(4)])
        #expect(Set([row, reordered, ["name": .string("b")]]).count == 2)
        #expect(Array(row).map(\.value) == [.string("a"), .integer(3)])
        #expect(FetchedDictionary([:]).isEmpty && row.dictionary == ["name": .string("a"), "weight": .integer(3)])
    }

    /// A few keys are found by comparison, many through a table: both find every key, and
    /// neither a NULL value nor a key not fetched.
    @Test func fetchedDictionariesFindKeysHoweverManyThereAre() {
        for count in [1, 8, 9, 40] {
            var entries = Dictionary(uniqueKeysWithValues: (0..<count).map { ("key \($0)", AttributeValue.integer(Int64($0))) })
            entries["absent"] = .null
            let row = FetchedDictionary(entries)
            #expect((0..<count).allSatisfy { row["key \($0)"] == .integer(Int64($0)) }, "\(count) keys")
            #expect(row["absent"] == nil && row["key \(count)"] == nil && row["Key 0"] == nil && row.count == count)
        }
    }

    @Test func prefetchingCostsOneQueryPerRelationship() async throws {
        let container = try await makeContainer()
        try await container.performBackgroundTask { context in
            let tags = (0..<3).map { index in
                let tag = Tag(context: context)
                tag.label = "tag \(index)"
                return tag
            }
            for index in 0..<10 {
                let team = Team(context: context)
                team.name = "team \(index)"
                for member in 0..<3 {
                    let player = Player(context: context)
                    player.name = "player \(index).\(member)"
                    player.team = team
                    player.tags = Set(tags.prefix(member + 1))
                }
            }
            try context.save()
        }
        let coordinator = container.persistentStoreCoordinator
        try await container.performBackgroundTask { context in
            var request = FetchRequest<Team>(sortDescriptors: [FetchSortDescriptor(key: "name")])
            request.relationshipKeyPathsForPrefetching = ["players", "players.tags"]
            let start = coordinator.requestCount
            let teams = try context.fetch(request)
            #expect(coordinator.requestCount == start + 3)
            let labels = teams.flatMap { $0.players }.flatMap { $0.tags }.map(\.label)
            #expect(labels.count == 10 * (1 + 2 + 3))
            #expect(coordinator.requestCount == start + 3)

            context.reset()
            var players = FetchRequest<Player>(entityName: "Player")
            players.relationshipKeyPathsForPrefetching = ["team"]
            let before = coordinator.requestCount
            let all = try context.fetch(players)
            #expect(Set(all.compactMap { $0.team?.name }).count == 10)
            #expect(coordinator.requestCount == before + 2)
        }
    }

    @Test func diacriticInsensitiveComparisonsInSQL() async throws {
        let container = try await makeContainer()
        for name in ["Crème brûlée", "creme brulee", "CRÈME", "Zoë", "Łódź"] { _ = try await container.saveItem(named: name) }
        let context = container.newBackgroundContext()
        try await context.perform { () throws in
            #expect(try items(context, "name BEGINSWITH[d] 'creme'") == ["creme brulee"])
            #expect(try items(context, "name BEGINSWITH[cd] 'creme'") == ["CRÈME", "Crème brûlée", "creme brulee"])
            #expect(try items(context, "name ==[cd] %@", "zoe") == ["Zoë"])
            #expect(try items(context, "name CONTAINS[cd] 'lod'") == ["Łódź"])
            #expect(try items(context, "name IN[cd] %@", ["ZOE", "creme"]) == ["CRÈME", "Zoë"])
            #expect(try items(context, "name LIKE[cd] '*brul?e'") == ["Crème brûlée", "creme brulee"])
        }
    }
}

private func capture(_ body: () throws -> Any) -> Error? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}
