import Foundation
@testable import PostgresData
import Testing

@_silgen_name("malloc_usable_size") private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer?) -> Int

/// What an object costs in memory, which a fetch of a million objects or a save of a hundred
/// thousand multiplies: one 80-byte block for a fetched object, and for a new one that
/// block and its array of values — no side object until a change must be tracked.
@Suite struct ObjectFootprintTests {
    private func blockSize(of object: ManagedObject) -> Int {
        mallocUsableSize(Unmanaged.passUnretained(object).toOpaque())
    }

    /// The smallest block of `objects`: `malloc` may hand one request a larger block (the
    /// rest of a split one, too small to keep), depending on what other threads freed; of
    /// several, one gets a block of its own size.
    private func smallestBlockSize(of objects: [ManagedObject]) -> Int {
        objects.map(blockSize(of:)).min() ?? .max
    }

    @Test func anObjectIsOneBlockOfEightyBytes() throws {
        let entity = try #require(testModel.entitiesByName["TodoList"])
        let faults = (0..<8).map { _ in ManagedObject.makeFault(.unassigned(for: entity)) }
        // glibc's usable size of an 80-byte block (72 bytes and its 8-byte header).
        #expect(smallestBlockSize(of: faults) <= 72, "a stored property more makes every object a 96-byte block")
    }

    @Test func aNewObjectKeepsItsValuesWithoutASideObject() throws {
        let container = PersistentContainer(name: "Footprint", model: testModel)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            let lists = (0..<8).map { _ in TodoList(context: context) }
            let list = lists[0]
            list.title = "first"
            list.title = "second"
            #expect(list.title == "second" && list.isInserted && list.changedProperties.isEmpty)
            #expect(!list.hasSideObject && smallestBlockSize(of: lists) <= 72)
            // Tracking a change (as for a saved object) makes the side object; the values stay.
            list.isInsertedStorage = false
            list.setPrimitiveValue(.string("third"), at: try #require(list.entity.propertyIndex(named: "title")))
            #expect(list.hasSideObject && list.title == "third" && Array(list.changedProperties).count == 1)
            list.isInsertedStorage = true
            context.reset()
        }
    }
}
