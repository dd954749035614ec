import Foundation
import PostgresData
import Testing

/// Object IDs as keys of large hash tables (identity maps, the row cache): equal IDs meet,
/// different ones stay apart, whatever the entity, the kind of ID or the pattern of keys.
@Suite struct ManagedObjectIDTests {
    private let coordinator = PersistentContainer(name: "IDs", model: testModel).persistentStoreCoordinator

    private func id(_ entity: String, _ key: Int) throws -> ManagedObjectID {
        try #require(coordinator.managedObjectID(forURIRepresentation: URL(string: "x-postgresdata://\(entity)/p\(key)")!))
    }

    @Test func runsOfKeysOfSeveralEntitiesHashApart() throws {
        var ids = Set<ManagedObjectID>()
        for key in 1...20_000 {
            ids.insert(try id("Item", key))
            ids.insert(try id("Team", key))
        }
        // Keys a power of two apart, the pattern a power-of-two table handles worst.
        for key in stride(from: 1 << 20, through: (1 << 20) + 4096 * 2_000, by: 4096) { ids.insert(try id("Item", key)) }
        #expect(ids.count == 40_000 + 2_001)
        #expect(try ids.contains(id("Team", 20_000)) && !ids.contains(id("Team", 20_001)))
        #expect(try ids.contains(id("Item", (1 << 20) + 4096)) && !ids.contains(id("Item", (1 << 20) + 4095)))
        // Copied in iteration order into a table that grows from empty: every ID arrives.
        var copy = Set<ManagedObjectID>()
        for id in ids { copy.insert(id) }
        #expect(copy == ids)
        // The same key in another entity is another ID.
        let (item, team, again) = (try id("Item", 7), try id("Team", 7), try id("Item", 7))
        #expect(item != team && item == again)
    }

    @Test func temporaryAndPermanentIDsWithTheSameNumberDiffer() async throws {
        let container = PersistentContainer(name: "IDs", model: testModel)
        let temporary = await container.viewContext.perform {
            let item = Item(context: container.viewContext)
            return item.objectID
        }
        #expect(temporary.isTemporaryID)
        let number = try #require(Int(temporary.uriRepresentation().lastPathComponent.dropFirst()))
        let permanent = try id("Item", number)
        #expect(permanent != temporary)
        #expect(Set([permanent, temporary, permanent]).count == 2)
    }

    @Test func anIDEncodesAsItsURIAndDecodesWithItsModel() throws {
        struct Job: Codable, Equatable { var item: ManagedObjectID; var attempts: Int }
        let job = Job(item: try id("Item", 42), attempts: 2)
        let data = try JSONEncoder().encode(job)
        #expect(String(decoding: data, as: UTF8.self).contains(#""x-postgresdata:\/\/Item\/p42""#))
        let decoder = JSONDecoder()
        decoder.userInfo[.managedObjectModel] = coordinator.managedObjectModel
        #expect(try decoder.decode(Job.self, from: data) == job)
        // Without the model, or with a URI of no entity of it, decoding fails clearly.
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Job.self, from: data) }
        let foreign = Data(#"{"item":"x-postgresdata://Planet/p1","attempts":0}"#.utf8)
        #expect(throws: DecodingError.self) { try decoder.decode(Job.self, from: foreign) }
        // A temporary ID does not encode.
        let temporary = Item(entity: try #require(coordinator.managedObjectModel.entitiesByName["Item"]), insertInto: nil)
        let context = PersistentContainer(name: "IDs", model: testModel).newBackgroundContext()
        context.performAndWait { context.insert(temporary) }
        #expect(throws: EncodingError.self) { try JSONEncoder().encode(temporary.objectID) }
    }
}

/// What a server needs to put an object in a URL and an ETag: its ID from a key, its row version.
@Suite struct RowVersionTests {
    @Test func anObjectsRowVersionIsTheRowsXminAndMovesWithEverySave() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        let (id, first) = try await context.perform {
            let item = Item(context: context)
            item.name = "versioned"
            #expect(item.rowVersion == nil, "not saved yet")
            try await context.save()
            return (item.objectID, try #require(item.rowVersion))
        }
        let key = try #require(id.primaryKey)
        #expect(try await container.rawIntegers("SELECT xmin::text::int8 FROM item WHERE id = \(key)") == [Int64(first)])
        // The ID from the key alone, as from a URL path; a fault fills to tell its version.
        let other = container.newBackgroundContext()
        let fromKey = try #require(container.persistentStoreCoordinator.managedObjectID(for: Item.self, primaryKey: key))
        #expect(fromKey == id)
        #expect(container.persistentStoreCoordinator.managedObjectID(entityName: "Item", primaryKey: key) == id)
        #expect(container.persistentStoreCoordinator.managedObjectID(entityName: "Nothing", primaryKey: key) == nil)
        let second = try await other.perform {
            let item = try #require(other.object(with: fromKey) as? Item)
            #expect(item.isFault)
            #expect(item.rowVersion == first)
            item.weight = 5
            try await other.save()
            return try #require(item.rowVersion)
        }
        #expect(second != first)
        #expect(try await container.rawIntegers("SELECT xmin::text::int8 FROM item WHERE id = \(key)") == [Int64(second)])
    }
}
