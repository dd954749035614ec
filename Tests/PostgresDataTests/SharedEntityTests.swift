import Foundation
import PostgresClient
@testable import PostgresData
import PostgresDataTesting
import Testing

/// An `@Entity` class listed in two models: each model has its own description, so their
/// indices, sequences and row caches never mix.
@Suite struct SharedEntityTests {
    @Test func twoModelsOfTheSameClassesInAnotherOrderKeepTheirOwnSequencesAndObjects() async throws {
        // Item first here, Profile first in the other model: their indices differ.
        let first = ManagedObjectModel(Item.self, TodoList.self, Profile.self)
        let second = ManagedObjectModel(Profile.self, TodoList.self, Item.self)
        #expect(first.problems.isEmpty && second.problems.isEmpty)
        let (a, b) = (try #require(first.entitiesByName["Item"]), try #require(second.entitiesByName["Item"]))
        #expect(a !== b)
        #expect(a.modelIndex == 0 && b.modelIndex == 2)
        let list = try #require(b.propertyIndex(named: "list"))
        #expect(b.destination(of: list) === second.entitiesByName["TodoList"])
        #expect(a.destination(of: list) === first.entitiesByName["TodoList"])

        let configuration = try await TestDatabase.fresh(prefix: "pd_shared")
        let one = PersistentContainer(name: "One", model: first)
        try await one.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        let two = PersistentContainer(name: "Two", model: second)
        try await two.loadPersistentStores(configuration: configuration)
        // A profile saved through the second model draws from profile's sequence, not item's
        // (the first model's index 2 is Profile, the second's is Item).
        for container in [one, two] {
            try await container.performBackgroundTask { context in
                let item = Item(context: context)
                item.name = "from \(container.name)"
                #expect(container.persistentStoreCoordinator.managedObjectModel.owns(item.entity))
                let made = Item(entity: Item.entity(), insertInto: context)
                made.name = "made with Item.entity() in \(container.name)"
                #expect(container.persistentStoreCoordinator.managedObjectModel.owns(made.entity))
                _ = Profile(context: context)
                try context.save()
            }
        }
        #expect(try await one.rawIntegers("SELECT id FROM item ORDER BY id") == [1, 2, 3, 4])
        #expect(try await one.rawIntegers("SELECT id FROM profile ORDER BY id") == [1, 2])
        // Each model's fetches give objects of its own description, read through its row cache.
        let names = try await two.performBackgroundTask { context in
            let items = try context.fetch(FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")]))
            #expect(items.allSatisfy { $0.entity === b })
            return items.map(\.name)
        }
        #expect(names.count == 4 && names.first == "from One")
        await one.persistentStoreCoordinator.close()
        await two.persistentStoreCoordinator.close()
    }
}
