import Foundation
@testable import PostgresData
import PostgresDataTesting
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

    /// Objects entered under a claim wait unplaced: a sweep lets go of those only the map
    /// holds without placing the rest, a foreign insertion ends the claim, the next lookup
    /// places them all, and `removeAll` hands every object to its closure once.
    @Test func claimedObjectsAreSweptFoundAndRemovedWithoutBeingLookedUp() throws {
        let entity = try #require(testModel.entitiesByName["Item"])
        let map = IdentityMap()
        var claim = try #require(map.claimIfEmpty())
        var kept: [ManagedObject] = []
        for key in 1...1_000 {
            let object = ManagedObject.makeFault(ManagedObjectID(entity: entity, primaryKey: Int64(key)))
            map.insertClaimed(object, claim: &claim)
            // Every other object is held elsewhere too; the rest only by the map.
            if key % 2 == 0 { kept.append(object) }
        }
        #expect(map.holds(claim) && map.count == 1_000 && map.capacity == 0)
        #expect(map.claimIfEmpty() == nil)
        var swept: [Int64] = []
        var removed = 0
        // Sweeps of 300 at a time, each from where the last one stopped, go round the list.
        for _ in 0..<10 { removed += map.sweep(limit: 300) { object in swept.append(object.objectID.primaryKey ?? 0); return true } }
        #expect(removed == 500 && map.count == 500 && map.capacity == 0)
        #expect(Set(swept) == Set((1...1_000).filter { $0 % 2 == 1 }.map(Int64.init)))
        // A sweep is a change: the claim ends with it, as it does with a foreign insertion.
        #expect(!map.holds(claim))
        let stranger = ManagedObject.makeFault(ManagedObjectID(entity: entity, primaryKey: 2))
        #expect(map.insert(stranger).registered === kept[0])
        #expect(map.capacity >= 500)
        for object in kept { #expect(map[object.objectID] === object) }
        var left = 0
        map.removeAll { _ in left += 1 }
        #expect(left == 500 && map.count == 0 && map.claimIfEmpty() != nil)
    }

    /// Emptied (a context's `reset()`), a map gives back a large table and keeps a small one;
    /// either way it registers and finds objects again afterwards.
    @Test func anEmptiedMapGivesBackALargeTable() throws {
        let entity = try #require(testModel.entitiesByName["Item"])
        for count in [1_000, 60_000] {
            let map = IdentityMap()
            let objects = (1...count).map { ManagedObject.makeFault(ManagedObjectID(entity: entity, primaryKey: Int64($0))) }
            for object in objects { map.insert(object) }
            #expect(map.capacity >= count)
            var left = 0
            map.removeAll { _ in left += 1 }
            #expect(left == count && map.count == 0)
            let isLarge = count * 4 / 3 > IdentityMap.largestKeptSlotCount
            #expect(map.capacity == 0 || !isLarge, "\(count) objects: the table went")
            #expect(map.capacity > 0 || isLarge, "\(count) objects: the table stayed")
            #expect(map.insert(objects[7]).inserted && map[objects[7].objectID] === objects[7])
            #expect(map[objects[8].objectID] == nil && map.count == 1)
        }
    }

    /// Sweeps that leave a large table an eighth full shrink it to what stays; the objects
    /// that stay are found under their IDs.
    @Test func sweepsShrinkALargeTableTheyLeftMostlyEmpty() throws {
        let entity = try #require(testModel.entitiesByName["Item"])
        let map = IdentityMap()
        var objects: [ManagedObject] = (1...60_000).map { ManagedObject.makeFault(ManagedObjectID(entity: entity, primaryKey: Int64($0))) }
        for object in objects { map.insert(object) }
        let kept = Array(objects.suffix(100))
        objects = []
        let large = map.capacity
        #expect(large >= 60_000)
        var removed = map.sweep(limit: 50_000) { _ in true }
        #expect(removed > 0 && map.capacity == large, "more than an eighth left: the table stays")
        while map.count > 100 { removed += map.sweep(limit: 50_000) { _ in true } }
        #expect(removed == 59_900 && map.capacity <= IdentityMap.largestKeptSlotCount / 4 * 3)
        for object in kept { #expect(map[object.objectID] === object) }
    }

    /// Removing many objects at once (a batch walk letting go of its batch) empties their
    /// slots and places the rest again; removing a few closes each hole. Either way the objects
    /// refused, and those another object of the same ID stands for, stay, an object listed
    /// twice leaves once, and every object left is found by its ID.
    @Test func manyObjectsLeaveTheMapAtOnceAndTheRestAreFound() throws {
        let entity = try #require(testModel.entitiesByName["Item"])
        for (total, leaving) in [(3_000, 2_500), (3_000, 40)] {
            let map = IdentityMap()
            let objects = (0..<total).map { key -> ManagedObject in
                let object = ManagedObject.makeFault(ManagedObjectID(entity: entity, primaryKey: Int64(key + 1)))
                return object
            }
            for object in objects { map.insert(object) }
            let stranger = ManagedObject.makeFault(objects[1].objectID)
            var removed = 0
            // The stranger has the ID of an object that leaves; the first object is listed twice.
            map.remove(Array(objects.prefix(leaving)) + [stranger, objects[0]], where: { $0.objectID.primaryKey != 5 }) { _ in removed += 1 }
            #expect(removed == leaving - 1, "\(leaving) of \(total)")
            #expect(map.count == total - leaving + 1)
            for (index, object) in objects.enumerated() {
                let stays = index >= leaving || index == 4
                let found = map.remove(object.objectID)
                #expect((found === object) == stays, "key \(index + 1), \(leaving) of \(total)")
            }
            #expect(map.count == 0)
        }
    }

    /// A context's change sets against an ordered model, through a seeded run of additions,
    /// replacements and removals (enough removals to close the holes several times): every
    /// object is found by identity, and the objects list in the order they joined.
    /// Its membership changes with every object that joins or leaves, and only then; a set
    /// made anew differs from one holding the same objects.
    @Test func anObjectSetKeepsTheOrderObjectsJoinedIn() throws {
        let entity = try #require(testModel.entitiesByName["Item"])
        let objects = (0..<500).map { _ in ManagedObject.makeFault(.unassigned(for: entity)) }
        var random = SplitMix64(seed: 0x5E7)
        var set = ObjectSet()
        var model: [ManagedObject] = []
        for _ in 0..<20_000 {
            let object = objects[random.next(below: objects.count)]
            let key = ObjectIdentifier(object)
            let before = set.membership
            if random.next(below: 2) == 0 {
                if !model.contains(where: { $0 === object }) {
                    // A new object, as a context's insertion appends it: hashed when next looked up.
                    if random.next(below: 2) == 0 { set.appendNew(object) } else { set[key] = object }
                    model.append(object)
                    #expect(set.membership != before)
                } else {
                    set[key] = object
                    #expect(set.membership == before)
                }
                if random.next(below: 8) == 0 {
                    #expect(set.count == model.count)
                    #expect(Array(set.values).map(ObjectIdentifier.init) == model.map(ObjectIdentifier.init))
                }
            } else {
                let removed = set.removeValue(forKey: key)
                let position = model.firstIndex { $0 === object }
                #expect((removed === object) == (position != nil))
                #expect((set.membership != before) == (position != nil))
                if let position { model.remove(at: position) }
            }
            #expect(set[key] === (model.contains { $0 === object } ? object : nil))
        }
        #expect(set.count == model.count && set.isEmpty == model.isEmpty)
        #expect(Array(set.values).map(ObjectIdentifier.init) == model.map(ObjectIdentifier.init))
        var remade = ObjectSet()
        for object in model { remade.appendNew(object) }
        #expect(remade.count == set.count && remade.membership != set.membership)
    }

    /// The map against a dictionary, through a seeded run of insertions, lookups and removals
    /// over two entities, permanent and temporary IDs, and keys in runs and scattered: every
    /// object stays reachable by its ID after removals shift their neighbours back, and the
    /// map holds each object exactly while it is registered.
    @Test func theIdentityMapAgreesWithADictionary() throws {
        let entities = try ["Item", "Team"].map { try #require(testModel.entitiesByName[$0]) }
        var random = SplitMix64(seed: 0x1D_3A9)
        let map = IdentityMap()
        var model: [ManagedObjectID: ManagedObject] = [:]
        var released = 0
        func object(_ id: ManagedObjectID) -> ManagedObject {
            let object = ManagedObject.makeFault(id)
            return object
        }
        for step in 0..<60_000 {
            let entity = entities[random.next(below: 2)]
            let key = Int64(random.next(below: 4) == 0 ? random.next(below: 1 << 40) : random.next(below: 3_000))
            let id = random.next(below: 10) == 0 ? ManagedObjectID.temporary(for: entity) : ManagedObjectID(entity: entity, primaryKey: key)
            switch random.next(below: 3) {
            case 0 where id.isTemporaryID && random.next(below: 2) == 0:
                // A new object's fresh ID: registered without a probe, placed when next used.
                let new = object(id)
                map.insertNew(new)
                #expect(model[id] == nil)
                model[id] = new
                #expect(map.count == model.count)
            case 0:
                let (registered, isNew) = map.object(for: id) { object(id) }
                #expect(isNew == (model[id] == nil))
                if let existing = model[id] {
                    #expect(registered === existing)
                    #expect(!map.remove(object(id)))      // another object with the same ID stays out
                }
                model[id] = registered
            case 1 where random.next(below: 2) == 0:
                let removed = map.remove(id)
                #expect(removed === model.removeValue(forKey: id))
                if removed != nil { released += 1 }
            case 1:
                let registered = model.removeValue(forKey: id)
                #expect(map.remove(registered ?? object(id)) == (registered != nil))
                if registered != nil { released += 1 }
            default:
                #expect(map[id] === model[id])
            }
            if step % 5_000 == 0 || step == 59_999 {
                #expect(map.count == model.count)
                // (Listed before the lookups, which place the objects still waiting.)
                #expect(Set(map.objects.map(ObjectIdentifier.init)) == Set(model.values.map(ObjectIdentifier.init)))
                for (id, object) in model { #expect(map[id] === object) }
            }
        }
        #expect(released > 1_000)
        weak var last: ManagedObject?
        weak var new: ManagedObject?
        do {
            let id = ManagedObjectID(entity: entities[0], primaryKey: -1)
            let only = object(id)
            last = only
            map.insert(only)
            let waiting = object(.temporary(for: entities[0]))
            new = waiting
            map.insertNew(waiting)
        }
        #expect(last != nil && new != nil)
        var left = 0
        map.removeAll { _ in left += 1 }
        #expect(left == model.count + 2)
        #expect(map.isEmpty && map.objects.isEmpty && last == nil && new == nil)
    }

    /// A large map lets its objects go in the order of their addresses: each exactly once,
    /// those nothing else holds freed, the map usable again. (10,000 objects fill 16,384 slots
    /// more than half: their addresses are sorted apart; 12,293 fill 32,768 less than half:
    /// sorted in the table.)
    @Test(arguments: [10_000, IdentityMap.addressOrderThreshold * 3 + 5])
    func removingManyObjectsVisitsAndReleasesEachOnce(count: Int) throws {
        let entity = try #require(testModel.entitiesByName["Item"])
        let map = IdentityMap()
        var kept: [ManagedObject] = []
        weak var dropped: ManagedObject?
        for key in 0..<count {
            let object = ManagedObject.makeFault(ManagedObjectID(entity: entity, primaryKey: Int64(key * 7)))
            map.insert(object)
            if key % 2 == 0 { kept.append(object) } else if key == 1 { dropped = object }
        }
        #expect(map.count == count && dropped != nil)
        var visited: [UInt] = []
        map.removeAll { visited.append(UInt(bitPattern: Unmanaged.passUnretained($0).toOpaque())) }
        let distinct = Set(visited)
        #expect(visited.count == count)
        #expect(distinct.count == count)
        #expect(zip(visited, visited.dropFirst()).allSatisfy { $0 >> 6 <= $1 >> 6 }, "in the order of the lines they start in")
        #expect(kept.allSatisfy { distinct.contains(UInt(bitPattern: Unmanaged.passUnretained($0).toOpaque())) })
        #expect(dropped == nil, "an object only the map held was freed")
        #expect(map.isEmpty && map.objects.isEmpty)
        #expect(map[kept[1].objectID] == nil)
        map.insert(kept[1])
        #expect(map[kept[1].objectID] === kept[1] && map.count == 1)
        // No address the sort left in a slot reads as an object.
        for object in kept.dropFirst(2) { map.insert(object) }
        #expect(map.objects.count == kept.count - 1)
        #expect(map[kept[0].objectID] == nil)
    }

    /// The address sort orders by 64-byte line, in as many passes as the span needs (one to
    /// three), with or without a scratch buffer given; addresses terabytes apart (heaps of
    /// several threads) keep each heap's in order.
    @Test(arguments: [(UInt(1) << 16, false), (UInt(1) << 26, true), (UInt(1) << 34, false)])
    func addressesAreSortedByLineInFewPasses(span: UInt, givenScratch: Bool) {
        var generator = SystemRandomNumberGenerator()
        let base: UInt = 0x5555_0000_0000
        var addresses = (0..<5_000).map { _ in base + UInt.random(in: 0..<span, using: &generator) & ~15 }
        let expected = addresses.sorted { $0 >> 6 < $1 >> 6 }
        let scratch = UnsafeMutablePointer<UInt>.allocate(capacity: addresses.count)
        defer { scratch.deallocate() }
        addresses.withUnsafeMutableBufferPointer { buffer in
            IdentityMap.sortByAddress(buffer.baseAddress!, count: buffer.count, from: buffer.min()!, to: buffer.max()!,
                                      scratch: givenScratch ? scratch : nil)
        }
        #expect(addresses.map { $0 >> 6 } == expected.map { $0 >> 6 })
        #expect(addresses.sorted() == expected.sorted())

        // Two heaps 40 TiB apart (the second not across a multiple of 512 GiB from the
        // lowest address): beyond three passes, each heap's addresses stay in order.
        let far: UInt = base + (UInt(40) << 40) + span
        var heaps = (0..<4_000).map { index in (index % 2 == 0 ? base : far) + UInt.random(in: 0..<span, using: &generator) & ~15 }
        heaps.withUnsafeMutableBufferPointer { buffer in
            IdentityMap.sortByAddress(buffer.baseAddress!, count: buffer.count, from: buffer.min()!, to: buffer.max()!, scratch: nil)
        }
        for heap in [heaps.filter { $0 < far }, heaps.filter { $0 >= far }] {
            #expect(heap.count == 2_000)
            #expect(zip(heap, heap.dropFirst()).allSatisfy { $0 >> 6 <= $1 >> 6 })
        }
    }

    /// A map grown past 2 MiB of slots moves to a mapping of its own (huge pages): every
    /// object stays reachable through the moves from the heap to mappings, `removeAll` empties
    /// the mapped table, and a map refilled holds its object and lets it go when it goes.
    @Test func aLargeMapOnAMappingOfItsOwnKeepsEveryObject() throws {
        let entity = try #require(testModel.entitiesByName["Item"])
        let count = 200_000  // beyond 262,144 slots at three quarters full
        var objects: [ManagedObject] = []
        objects.reserveCapacity(count)
        weak var watched: ManagedObject?
        do {
            let map = IdentityMap()
            for key in 0..<count {
                let object = ManagedObject.makeFault(ManagedObjectID(entity: entity, primaryKey: Int64(key) * 3))
                map.insert(object)
                objects.append(object)
            }
            #if os(Linux)
            #expect(map.slotsAreMapped)
            #endif
            #expect(map.count == count)
            for object in objects where map[object.objectID] !== object {
                Issue.record("\(object.objectID) is not found")
                break
            }
            #expect(map[ManagedObjectID(entity: entity, primaryKey: 1)] == nil)
            map.removeAll()
            #expect(map.isEmpty && map[objects[7].objectID] == nil)
            map.insert(objects[7])
            #expect(map[objects[7].objectID] === objects[7] && map.count == 1)
            watched = objects[7]
            objects = []
            #expect(watched != nil, "the map holds the object it registered")
        }
        #expect(watched == nil, "the map let its object go when it went")
    }

    /// New objects taking their keys (a save's inserted objects) are found by their new IDs
    /// and no longer by their temporary ones: while none of the map's objects is placed yet,
    /// and among fetched objects, in one pass (many) or one at a time (few).
    @Test func objectsGivenNewKeysAreFoundByThemAlone() throws {
        let entity = try #require(testModel.entitiesByName["Item"])
        for (fetched, inserted) in [(0, 1_000), (0, 10), (300, 1_000), (300, 20)] {
            let map = IdentityMap()
            var objects: [ManagedObject] = []
            for key in 0..<fetched {
                let object = ManagedObject.makeFault(ManagedObjectID(entity: entity, primaryKey: Int64(key)))
                map.insert(object)
                objects.append(object)
            }
            var new: [ManagedObject] = []
            for _ in 0..<inserted {
                let object = ManagedObject.makeFault(ManagedObjectID.temporary(for: entity))
                map.insertNew(object)
                new.append(object)
            }
            let temporary = new.map(\.objectID)
            var seen: [Int] = []
            map.rekey(count: new.count) { rekey in
                for (index, object) in new.enumerated() {
                    rekey(object) {
                        seen.append(index)
                        object.objectID = ManagedObjectID(entity: entity, primaryKey: 10_000 + Int64(index))
                        objects.append(object)
                    }
                }
            }
            #expect(seen == Array(0..<inserted))
            #expect(new.map { $0.objectID.primaryKey } == (0..<inserted).map { 10_000 + Int64($0) })
            #expect(map.count == fetched + inserted, "\(fetched) fetched, \(inserted) inserted")
            for id in temporary { #expect(map[id] == nil) }
            for (key, object) in objects.enumerated() {
                #expect(map[object.objectID] === object, "\(fetched) fetched, \(inserted) inserted: object \(key)")
            }
            #expect(Set(map.objects.map(ObjectIdentifier.init)) == Set(objects.map(ObjectIdentifier.init)))
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


extension IdentityMapTests {
    /// The read time a row-cache entry carries (stalenessInterval) fits in its padding.
    @Test func aRowCacheEntryStaysThirtyTwoBytes() {
        #expect(RowCache.entryStride == 32)
    }

    /// `retainsRegisteredObjects` false (the default, as in Core Data): unchanged objects
    /// nothing else holds leave the context, a slice per event, and give back their row-cache
    /// references; held, inserted and changed objects stay; true keeps everything.
    @Test func unchangedObjectsNothingHoldsLeaveTheContextUnlessItRetainsThem() async throws {
        let container = try await makeContainer(items: 3000)
        let coordinator = container.persistentStoreCoordinator
        let context = container.newBackgroundContext()
        #expect(context.retainsRegisteredObjects == false)
        let kept = KeptObjects()
        let (changedID, leftID, leftName) = try await context.perform { () throws -> (ManagedObjectID, ManagedObjectID, String) in
            let items = try context.fetch(FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")]))
            #expect(items.count == 3000 && context.registeredObjects.count == 3000)
            #expect(coordinator.cachedRowCount == 3000)
            kept.objects = Array(items.prefix(10))
            items[20].weight = 7
            let inserted = Item(context: context)
            inserted.name = "unsaved"
            return (items[20].objectID, items[100].objectID, items[100].name)
        }
        // Events (perform blocks) let go of the others, a slice of the map each.
        var events = 0
        while await context.perform({ context.registeredObjects.count }) > 12, events < 100 { events += 1 }
        #expect(events < 100)
        try await context.perform { () throws in
            let registered = Set(context.registeredObjects.map(\.objectID))
            #expect(registered.count == 12)
            #expect(Set(kept.objects.map(\.objectID)).isSubset(of: registered))
            #expect(registered.contains(changedID) && context.insertedObjects.count == 1)
            #expect(coordinator.cachedRowCount == 11, "the rows of the objects that left left the row cache")
            // An object that left is a new fault when asked for again, with the row's values.
            #expect(context.registeredObject(for: leftID) == nil)
            #expect(try #require(context.existingObject(with: leftID) as? Item).name == leftName)
            try context.save()
        }
        // Saved, the changed and inserted objects are unchanged: they may leave too.
        events = 0
        while await context.perform({ context.registeredObjects.count }) > 10, events < 100 { events += 1 }
        #expect(await context.perform { context.registeredObjects.count } == 10)
        kept.objects = []

        let retaining = container.newBackgroundContext()
        retaining.retainsRegisteredObjects = true
        try await retaining.perform { _ = try retaining.fetch(FetchRequest<Item>()) }
        for _ in 0..<20 { await retaining.perform {} }
        #expect(await retaining.perform { retaining.registeredObjects.count } == 3001)
        await coordinator.close()
    }

    /// A table of the row cache that removals leave mostly empty gives its room back, keeping
    /// the entries that remain: the coordinator lives as long as the process, and one large
    /// save would otherwise hold its table for good.
    @Test func theRowCacheGivesBackTheRoomOfRowsThatLeft() throws {
        let entity = try #require(testModel.entitiesByName["Item"])
        let cache = RowCache()
        let ids = (1...20_000).map { ManagedObjectID(entity: entity, primaryKey: Int64($0)) }
        var values = entity.defaultValues
        values[0] = .string("kept")
        cache.retain(ids.map { ($0, RowSnapshot(values: values, version: 2)) })
        #expect(cache.count == 20_000 && cache.capacity >= 20_000)
        cache.release(ids.prefix(15_000))
        #expect(cache.count == 5_000 && cache.capacity >= 20_000, "a quarter full: the room stays")
        cache.release(ids[15_000..<19_990])
        #expect(cache.count == 10 && cache.capacity <= RowCache.smallestShrunkCapacity)
        let remaining = ids.suffix(10).map { cache.snapshot(for: $0) }
        #expect(remaining.allSatisfy { $0?.value(at: 0) == .string("kept") && $0?.version == 2 })
        #expect(cache.snapshot(for: ids[0]) == nil)
    }

    /// The same through a context: the rows of a save of more than a few thousand fetched
    /// objects leave the cache's room with them when the context is reset.
    @Test func resettingAContextGivesBackTheRowCachesRoom() async throws {
        let container = try await makeContainer(items: 8000)
        let coordinator = container.persistentStoreCoordinator
        let context = container.newBackgroundContext()
        context.retainsRegisteredObjects = true
        try await context.perform {
            // Two fetches of 4,000: a fetch of more than 5,000 would keep its rows out of the cache.
            for half in 0..<2 {
                var request = FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])
                request.fetchOffset = half * 4000
                request.fetchLimit = 4000
                for item in try context.fetch(request) { item.weight = 1 }
            }
            try context.save()
        }
        #expect(coordinator.cachedRowCount == 8000 && coordinator.cachedRowCapacity >= 8000)
        await context.perform { context.reset() }
        #expect(coordinator.cachedRowCount == 0)
        #expect(coordinator.cachedRowCapacity <= RowCache.smallestShrunkCapacity)
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE weight = 1") == [8000])
        await coordinator.close()
    }

    /// A large fetch's reader begins after its query, as if before it: only when no row of the
    /// cache changed since the mark taken before the query (another reader beginning changes
    /// none); otherwise the fetch's rows go through the cache.
    @Test func aReaderBegunAfterItsQueryNeedsTheCacheUnchangedSinceTheMark() throws {
        let entity = try #require(testModel.entitiesByName["Item"])
        let cache = RowCache()
        let mark = cache.mark()
        let other = cache.beginReading()
        let reader = try #require(cache.beginReading(unchangedSince: mark))
        #expect(reader.generation > other.generation && cache.isCurrent(generation: reader.generation, stamp: reader.stamp, oldest: nil))
        let id = ManagedObjectID(entity: entity, primaryKey: 7)
        cache.update([(id, RowSnapshot(values: entity.defaultValues, version: 2))])
        #expect(!cache.isCurrent(generation: reader.generation, stamp: reader.stamp, oldest: nil), "a change after the reader began")
        #expect(cache.beginReading(unchangedSince: mark) == nil, "a change since the mark")
        #expect(cache.beginReading(unchangedSince: cache.mark()) != nil)
    }

    /// A container whose items make a large fetch: 6,000 of them ("item 1"…, a second apart),
    /// more than the 5,000 a fetch keeps in the row cache.
    private func containerWithALargeFetch() async throws -> PersistentContainer {
        let container = try await makeContainer()
        try await container.rawExecute("""
            INSERT INTO item (name, created_at, done, weight)
            SELECT 'item ' || i, now() + i * interval '1 second', false, i % 1000 FROM generate_series(1, 6000) AS i
            """)
        return container
    }

    /// The faults of a fetch of more than 5,000 rows keep their rows to themselves, as an
    /// asynchronous fetch's do: nothing enters the row cache; a row another context saves
    /// meanwhile fires with the saved values, the others with theirs; and a fault saves
    /// against the version it was fetched with.
    @Test func faultsOfALargeFetchKeepTheirRowsAndFireWithNewerOnes() async throws {
        let container = try await containerWithALargeFetch()
        let coordinator = container.persistentStoreCoordinator
        let context = container.newBackgroundContext()
        let kept = KeptObjects()
        let allFaults = try await context.perform { () throws -> Bool in
            kept.objects = try context.fetch(FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "createdAt")]))
            return kept.objects.count == 6000 && kept.objects.allSatisfy(\.isFault)
        }
        #expect(allFaults)
        #expect(coordinator.cachedRowCount == 0, "the faults keep their rows to themselves")

        try await container.performBackgroundTask { other in
            var request = FetchRequest<Item>()
            request.predicate = try FetchPredicate(format: "name == 'item 2'")
            try other.fetch(request)[0].name = "renamed"
            try other.save()
        }
        let names = await context.perform { kept.objects.compactMap { ($0 as? Item)?.name } }
        #expect(names.count == 6000)
        #expect(names[1] == "renamed")
        #expect(names[0] == "item 1" && names[2] == "item 3" && names[5999] == "item 6000")

        try await container.rawExecute("UPDATE item SET weight = 999 WHERE name = 'item 4'")
        let error = await context.perform { () -> PostgresDataError? in
            (kept.objects[3] as? Item)?.done = true
            do { try context.save() } catch { return error as? PostgresDataError }
            return nil
        }
        guard case .mergeConflict(let conflicts)? = error else {
            Issue.record("expected a merge conflict, got \(String(describing: error))")
            return
        }
        #expect(conflicts.first?.databaseValues?["weight"] == .integer(999))
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE done") == [0])
        kept.objects = []
        await coordinator.close()
    }

    /// The faults of a large fetch keep the cache's reader for their rows while one of them
    /// still waits, and no longer: once the last fires, the cache stops keeping changed rows
    /// for it, though the objects still read their rows.
    @Test func theLastFaultOfALargeFetchToFireEndsItsReading() async throws {
        let container = try await containerWithALargeFetch()
        let coordinator = container.persistentStoreCoordinator
        let context = container.newBackgroundContext()
        let kept = KeptObjects()
        let firstNames = try await context.perform { () throws -> [String] in
            kept.objects = try context.fetch(FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "createdAt")]))
            return kept.objects.dropLast().compactMap { ($0 as? Item)?.name }
        }
        #expect(firstNames.count == 5999 && firstNames[4999] == "item 5000")
        #expect(coordinator.keepsRowsForReaders, "one fault still waits")
        let lastName = await context.perform { (kept.objects.last as? Item)?.name }
        #expect(lastName == "item 6000")
        #expect(!coordinator.keepsRowsForReaders)
        await context.perform { context.reset() }
        kept.objects = []
        await coordinator.close()
    }
}

/// Objects carried out of a context's queue by a test, read only after the context is gone.
/// A container whose database holds `count` items named "item 1", "item 2"…, of weight 0.
private func makeContainer(items count: Int) async throws -> PersistentContainer {
    let container = try await makeContainer()
    try await container.rawExecute("""
        INSERT INTO item (name, created_at, done, weight)
        SELECT 'item ' || i, now(), false, 0 FROM generate_series(1, \(count)) AS i
        """)
    return container
}

private final class KeptObjects: @unchecked Sendable {
    var objects: [ManagedObject] = []
    weak var context: ManagedObjectContext?
}
