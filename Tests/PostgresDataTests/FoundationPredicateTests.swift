import Foundation
import PostgresData
import Testing

/// Foundation `#Predicate` and `SortDescriptor` translate to the same SQL as format strings.
@Suite struct FoundationPredicateTests {
    func seeded() async throws -> PersistentContainer {
        let container = try await makeContainer()
        try await container.performBackgroundTask { context in
            let home = TodoList(context: context)
            home.title = "Home"
            for (name, weight, notes, list) in [("apples", 3, nil, home), ("bread", 10, "fresh", home), ("beans", 7, "dry", nil),
                                                ("Cheese", 0, "", nil)] as [(String, Int, String?, TodoList?)] {
                let item = Item(context: context)
                item.name = name
                item.weight = weight
                item.notes = notes
                item.list = list
            }
            let fast = Tag(context: context)
            fast.label = "fast"
            let ann = Player(context: context)
            ann.name = "Ann"
            ann.tags = [fast]
            let bob = Player(context: context)
            bob.name = "Bob"
            try context.save()
        }
        return container
    }

    func names(_ container: PersistentContainer, _ predicate: Predicate<Item>) async throws -> [String] {
        let request = try FetchRequest<Item>(predicate: predicate, sortBy: [SortDescriptor(\.name)])
        return try await container.performBackgroundTask { context in try context.fetch(request).map(\.name) }
    }

    @Test func translatedPredicatesSelectLikeFormatStrings() async throws {
        let c = try await seeded()
        let limit = 5
        #expect(try await names(c, #Predicate { $0.weight > limit && !$0.done }) == ["beans", "bread"])
        #expect(try await names(c, #Predicate { $0.weight * 2 - 1 >= 13 || $0.name == "Cheese" }) == ["Cheese", "beans", "bread"])
        #expect(try await names(c, #Predicate { $0.notes == nil }) == ["apples"])
        #expect(try await names(c, #Predicate { $0.notes != nil && $0.name.starts(with: "b") }) == ["beans", "bread"])
        #expect(try await names(c, #Predicate { $0.name.contains("ea") }) == ["beans", "bread"])
        #expect(try await names(c, #Predicate { [0, 3].contains($0.weight) }) == ["Cheese", "apples"])
        #expect(try await names(c, #Predicate { $0.list?.title == "Home" }) == ["apples", "bread"])
        #expect(try await names(c, #Predicate { $0.list == nil }) == ["Cheese", "beans"])
        #expect(try await names(c, #Predicate { -$0.weight < -5 }) == ["beans", "bread"])
        let players = { (predicate: Predicate<Player>) async throws -> [String] in
            let request = try FetchRequest<Player>(predicate: predicate, sortBy: [SortDescriptor(\.name, order: .reverse)])
            return try await c.performBackgroundTask { context in try context.fetch(request).map(\.name) }
        }
        #expect(try await players(#Predicate { $0.tags.contains { $0.label == "fast" } }) == ["Ann"])
        #expect(try await players(#Predicate { $0.tags.allSatisfy { $0.label == "slow" } }) == ["Bob"])
        #expect(try await players(#Predicate { $0.tags.isEmpty }) == ["Bob"])
        #expect(try await players(#Predicate { $0.tags.count >= 0 }) == ["Bob", "Ann"])
    }

    @Test func untranslatableConstructsAreNamed() throws {
        #expect(throws: PostgresDataError.self) { try FetchPredicate(#Predicate<Item> { ($0.notes ?? "") == "" }) }
        do {
            _ = try FetchPredicate(#Predicate<Item> { ($0.notes ?? "") == "" })
        } catch {
            #expect("\(error)".contains("NilCoalesce cannot be translated to SQL"))
        }
        let descriptor = try FetchSortDescriptor(SortDescriptor(\Item.weight, order: .reverse))
        #expect(descriptor == FetchSortDescriptor(key: "weight", ascending: false))
    }
}
