import Foundation
@testable import PostgresData
import Testing

/// Registering fetched rows keeps one object per ID, however the rows arrive.
@Suite struct IdentityMapTests {
    @Test func aKeyMetTwiceInOneDeliveryIsOneObject() throws {
        let container = PersistentContainer(name: "Identity", model: testModel)
        let context = container.newBackgroundContext()
        let entity = try #require(testModel.entitiesByName["Item"])
        let row = RowSnapshot(values: entity.defaultValues, version: 1)
        context.performAndWait {
            // Into an empty map (inserted blindly), then into a filled one (looked up first).
            for keys in [[1, 2, 1] as [Int64], [3, 2, 3]] {
                let objects = context.register(keys.map { ($0, row) }, entity: entity, sharesRows: false)
                #expect(objects.count == 3 && objects[0] === objects[2])
                #expect(objects.allSatisfy { $0.managedObjectContext === context })
            }
            #expect(context.registeredObjects.count == 3)
            #expect(Set(context.registeredObjects.map { $0.objectID.primaryKey }) == [1, 2, 3])
        }
    }
}
