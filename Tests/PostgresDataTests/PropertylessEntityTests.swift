import Foundation
import PostgresData
import PostgresDataTesting
import Testing

/// An entity with no properties at all (a row that is only its key, as a marker table's):
/// its objects are saved, fetched, faulted and refreshed as any other's.
@Suite struct PropertylessEntityTests {
    @Test func objectsOfAnEntityWithoutPropertiesRoundTripInConcurrentContexts() async throws {
        let model = ManagedObjectModel(entities: [EntityDescription(name: "Marker", properties: [])])
        #expect(model.problems.isEmpty)
        let container = PersistentContainer(name: "Markers", model: model)
        try await container.loadPersistentStores(configuration: try await TestDatabase.fresh(prefix: "pd_propertyless"),
                                                 options: .init(createSchemaIfMissing: true))
        let entity = try #require(model.entitiesByName["Marker"])
        let ids = try await container.performBackgroundTask { context in
            let markers = (0..<3).map { _ in ManagedObject(entity: entity, insertInto: context) }
            try context.save()
            return markers.map(\.objectID)
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM marker") == [3])
        // Several contexts at once read the rows: fetched whole, as faults filled by a query,
        // and refreshed.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    try await container.performBackgroundTask { context in
                        var request = FetchRequest<ManagedObject>(entityName: "Marker")
                        request.returnsObjectsAsFaults = false
                        let fetched = try context.fetch(request)
                        #expect(Set(fetched.map(\.objectID)) == Set(ids))
                        #expect(fetched.allSatisfy { !$0.isFault })
                        for object in fetched { context.refresh(object, mergeChanges: false) }
                        for object in fetched {
                            #expect(object.isFault)
                            try object.load()
                            #expect(!object.isFault && !object.isDeleted)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
