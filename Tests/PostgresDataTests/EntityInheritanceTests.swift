import Foundation
import PostgresClient
@testable import PostgresData
import PostgresDataTesting
import Testing

@Entity(isAbstract: true) class Vehicle: ManagedObject {
    var name: String = ""
    var wheels: Int = 4
    var garage: Garage?
}

@Entity final class Car: Vehicle {
    var doors: Int = 4
    @Attribute(.unique) var plate: String?
}

@Entity final class Truck: Vehicle {
    var payload: Double = 0
    var cabin: String = "day"
}

@Entity final class Garage: ManagedObject {
    var name: String = ""
    @Relationship(inverse: \Vehicle.garage) var vehicles: Set<Vehicle>
}

let vehicleModel = ManagedObjectModel(Vehicle.self, Car.self, Truck.self, Garage.self)

/// Entity inheritance: one table per hierarchy with an entity column, fetches of a parent
/// returning its sub-entities' objects with their own classes.
@Suite struct EntityInheritanceTests {
    @Test func aHierarchyIsOneTableWithAnEntityColumn() throws {
        #expect(vehicleModel.problems.isEmpty)
        let car = try #require(vehicleModel.entitiesByName["Car"])
        let vehicle = try #require(vehicleModel.entitiesByName["Vehicle"])
        #expect(car.superentity === vehicle && vehicle.subentities.map(\.name) == ["Car", "Truck"])
        // An inherited relationship has its parent's inverse: no implicit one is added.
        #expect(try #require(vehicleModel.entitiesByName["Garage"]).relationships.map(\.name) == ["vehicles"])
        #expect(car.tableName == "vehicle" && car.properties.map(\.name) == ["name", "wheels", "garage", "doors", "plate"])
        let sql = vehicleModel.createSchemaSQL()
        #expect(!sql.contains(#"CREATE TABLE "car""#) && !sql.contains(#"CREATE TABLE "truck""#))
        #expect(sql.contains(#""entity_name" text NOT NULL CONSTRAINT "vehicle_entity_name_check" CHECK ("entity_name" IN ('Car', 'Truck'))"#))
        // A sub-entity's required attribute: nullable, required on its rows by a CHECK.
        #expect(sql.contains(#""cabin" text DEFAULT 'day'"#))
        #expect(sql.contains(#"ADD CONSTRAINT "vehicle_cabin_required" CHECK ("entity_name" NOT IN ('Truck') OR "cabin" IS NOT NULL)"#))
        // Fetches of a sub-entity name it; of the top entity, nothing needs to.
        let (cars, _) = try FetchRequest<Car>().sql(for: car, columns: "t.\"id\"")
        #expect(cars == #"SELECT t."id" FROM "vehicle" AS t WHERE (t."entity_name" = 'Car')"#)
        let (all, _) = try FetchRequest<Vehicle>().sql(for: vehicle, columns: "t.\"id\"")
        #expect(all == #"SELECT t."id" FROM "vehicle" AS t"#)
    }

    func container() async throws -> PersistentContainer {
        let configuration = try await TestDatabase.fresh(prefix: "pd_inherit")
        let container = PersistentContainer(name: "Vehicles", model: vehicleModel)
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        return container
    }

    @Test func aParentFetchReturnsEachObjectWithItsOwnClass() async throws {
        let container = try await container()
        let garageID = try await container.performBackgroundTask { context in
            let garage = Garage(context: context)
            garage.name = "north"
            let car = Car(context: context)
            car.name = "mini"
            car.doors = 3
            car.plate = "AB-1"
            car.garage = garage
            let truck = Truck(context: context)
            truck.name = "hauler"
            truck.wheels = 6
            truck.payload = 12.5
            truck.garage = garage
            try context.save()
            return garage.objectID
        }
        #expect(try await container.rawStrings("SELECT entity_name || ':' || name FROM vehicle ORDER BY id") == ["Car:mini", "Truck:hauler"])
        try await container.performBackgroundTask { context in
            let vehicles = try context.fetch(FetchRequest<Vehicle>(sortDescriptors: [FetchSortDescriptor(key: "name")]))
            #expect(vehicles.map { "\(type(of: $0))" } == ["Truck", "Car"])
            #expect((vehicles[0] as? Truck)?.payload == 12.5 && (vehicles[1] as? Car)?.doors == 3)
            // A predicate on a parent key, and a fetch of one sub-entity.
            let sixWheels = try context.fetch(FetchRequest<Vehicle>(predicate: try FetchPredicate(format: "wheels == 6")))
            #expect(sixWheels.map(\.name) == ["hauler"] && sixWheels.first is Truck)
            #expect(try context.fetch(FetchRequest<Car>()).map(\.name) == ["mini"])
            #expect(try context.count(for: FetchRequest<Truck>()) == 1)
            var ownOnly = FetchRequest<Vehicle>()
            ownOnly.includesSubentities = false
            #expect(try context.fetch(ownOnly).isEmpty)  // Vehicle is abstract: no rows of its own.
            let ids = try context.fetch(FetchRequest<ManagedObjectID>(entityName: "Vehicle", sortDescriptors: [FetchSortDescriptor(key: "name")]))
            #expect(ids.map(\.entity.name) == ["Truck", "Car"])
        }
        // A relationship to the parent entity holds the sub-entities' objects, read in a fresh context.
        try await container.performBackgroundTask { context in
            let garage = try #require(try context.existingObject(with: garageID) as? Garage)
            #expect(Set(garage.vehicles.map { "\(type(of: $0)):\($0.name)" }) == ["Car:mini", "Truck:hauler"])
            let car = try #require(garage.vehicles.first { $0 is Car } as? Car)
            #expect(car.plate == "AB-1" && car.garage?.objectID == garageID)
            car.doors = 5
            try context.save()
        }
        #expect(try await container.rawIntegers("SELECT doors FROM vehicle WHERE entity_name = 'Car'") == [5])
        // Prefetching a relationship to the parent entity, and batched faults of a parent fetch.
        try await container.performBackgroundTask { context in
            var garages = FetchRequest<Garage>()
            garages.relationshipKeyPathsForPrefetching = ["vehicles"]
            let garage = try #require(try context.fetch(garages).first)
            #expect(Set(garage.vehicles.map { "\(type(of: $0))" }) == ["Car", "Truck"])
            var batched = FetchRequest<Vehicle>(sortDescriptors: [FetchSortDescriptor(key: "name")])
            batched.fetchBatchSize = 1
            let vehicles = try context.fetch(batched)
            #expect(vehicles.map(\.name) == ["hauler", "mini"] && (vehicles[1] as? Car)?.doors == 5)
        }
    }

    @Test func constraintsAndBatchRequestsKeepToTheirEntity() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        try await context.perform {
            for index in 0..<3 {
                let car = Car(context: context)
                car.name = "car\(index)"
                let truck = Truck(context: context)
                truck.name = "truck\(index)"
            }
            // An abstract entity has no objects of its own.
            let vehicle = Vehicle(context: context)
            vehicle.name = "generic"
            #expect { try context.save() } throws: { "\($0)".contains("abstract entity Vehicle") }
            context.delete(vehicle)
            try context.save()
        }
        // A Car row need not have a cabin; a Truck row must.
        try await container.rawExecute("INSERT INTO vehicle (name, wheels, doors, entity_name) VALUES ('raw car', 4, 2, 'Car')")
        await #expect(throws: (any Error).self) {
            try await container.rawExecute("INSERT INTO vehicle (name, wheels, payload, cabin, entity_name) VALUES ('raw truck', 6, 1, NULL, 'Truck')")
        }
        let update = BatchUpdateRequest(entityName: "Car", propertiesToUpdate: ["wheels": 3])
        #expect(try await context.execute(update).count == 4)
        var delete = BatchDeleteRequest(fetchRequest: FetchRequest<Truck>())
        delete.resultType = .count
        #expect(try await context.execute(delete).count == 3)
        #expect(try await container.rawStrings("SELECT entity_name || ':' || wheels FROM vehicle ORDER BY id").allSatisfy { $0 == "Car:3" })
    }
}
