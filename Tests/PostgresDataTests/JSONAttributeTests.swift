import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import Testing

struct Reading: Codable, Hashable, Sendable {
    var celsius: Double
}

@Entity final class Gauge: ManagedObject {
    var label: String
    var last: Reading = Reading(celsius: 0)
}

@Entity final class Unreadable: ManagedObject {
    var reading: Reading
}

/// JSON attributes meet JSON they cannot read, and values JSON cannot hold: an error, never a stop.
@Suite struct JSONAttributeTests {
    @Test func jsonAnotherProgramWroteReadsAsNilOrTheDefaultAndTheBlockThrows() async throws {
        let container = try await makeContainer()
        let id = try await container.performBackgroundTask { context in
            let profile = Profile(context: context)
            profile.settings = Settings(theme: "dark", fontSize: 12)
            try context.save()
            return profile.objectID
        }
        // Another program writes JSON of another shape.
        try await container.rawExecute(#"UPDATE profile SET settings = '{"theme": 5}'"#)
        let context = container.newBackgroundContext()
        let error = await captureDataError {
            try await context.perform {
                let profile = try #require(try await context.existingObject(with: id) as? Profile)
                #expect(profile.settings == nil)
            }
        }
        #expect("\(String(describing: error))".contains("Profile.settings"), "\(String(describing: error))")
        // The row is untouched and still readable once fixed.
        try await container.rawExecute(#"UPDATE profile SET settings = '{"theme": "light", "fontSize": 9}'"#)
        let fixed = try await context.perform { () async throws -> Settings? in
            let profile = try #require(try await context.existingObject(with: id) as? Profile)
            context.refresh(profile, mergeChanges: false)
            try await profile.load()
            return profile.settings
        }
        #expect(fixed == Settings(theme: "light", fontSize: 9))
        await container.persistentStoreCoordinator.close()
    }

    @Test func aValueJSONCannotHoldIsNotSetAndTheSaveSaysSo() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_json")
        let container = PersistentContainer(name: "Gauges", model: ManagedObjectModel(Gauge.self))
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        let context = container.newBackgroundContext()
        let error = await captureDataError {
            try await context.perform {
                let gauge = Gauge(context: context)
                gauge.label = "boiler"
                gauge.last = Reading(celsius: .nan)  // from a request, say
                #expect(gauge.last == Reading(celsius: 0))
                try await context.save()
            }
        }
        #expect("\(String(describing: error))".contains("Gauge.last"), "\(String(describing: error))")
        #expect(try await container.rawIntegers("SELECT count(*) FROM gauge") == [0])
        await container.persistentStoreCoordinator.close()
    }

    @Test func aRequiredJSONAttributeWithoutADefaultIsAModelProblem() {
        let model = ManagedObjectModel(Unreadable.self)
        #expect(model.problems.contains { $0.contains("Unreadable.reading") && $0.contains("Optional") })
    }
}
