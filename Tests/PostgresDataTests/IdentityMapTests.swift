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

    /// Objects hold their context unretained: every way out of its identity map, and the
    /// context's end, must leave them with no context (a missed one would point at freed
    /// memory).
    @Test func objectsThatLeaveTheirContextNoLongerReferToIt() async throws {
        let container = try await makeContainer()
        try await container.performBackgroundTask { context in
            for index in 1...6 { Item(context: context).name = "Item \(index)" }
            try context.save()
        }
        let kept = KeptObjects()
        do {
            let context = container.newBackgroundContext()
            kept.context = context
            let asynchronous = AsynchronousFetchRequest(fetchRequest: FetchRequest<Item>())
            let result = try await context.perform { () throws in try context.execute(asynchronous) }
            try await result.wait()
            try await context.perform { () throws in
                let faults = result.finalResult ?? []
                #expect(faults.count == 6 && faults.allSatisfy { $0.isFault && $0.managedObjectContext === context })
                var request = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])
                request.returnsObjectsAsFaults = false
                let items = try context.fetch(request)
                let deleted = items[0]
                context.delete(deleted)
                try context.save()
                #expect(deleted.managedObjectContext == nil)

                let inserted = Item(context: context)
                inserted.name = "Unsaved"
                context.rollback()
                #expect(inserted.managedObjectContext == nil)

                context.reset()
                #expect(items.allSatisfy { $0.managedObjectContext == nil })
                kept.objects += items + [deleted, inserted]

                let refetched = try context.fetch(request)
                let pending = Item(context: context)
                pending.name = "Pending"
                kept.objects += refetched + [pending] + faults
                #expect(refetched.allSatisfy { $0.managedObjectContext === context })
            }
        }
        // Blocks and tasks of the context may still release it on their threads: wait for
        // its end, then its objects outlive it without it.
        for _ in 0..<500 where kept.context != nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(kept.context == nil)
        let orphans = kept.objects
        #expect(orphans.count == 20)
        #expect(orphans.allSatisfy { $0.managedObjectContext == nil })
    }
}


/// Objects carried out of a context's queue by a test, read only after the context is gone.
private final class KeptObjects: @unchecked Sendable {
    var objects: [ManagedObject] = []
    weak var context: ManagedObjectContext?
}
