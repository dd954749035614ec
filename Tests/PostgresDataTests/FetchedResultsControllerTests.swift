import Foundation
import PostgresClient
@testable import PostgresData
import PostgresDataTesting
import Testing

/// The fetched-results controller follows a scripted series of changes — other contexts'
/// saves, its own context's edits, batch updates, another coordinator's saves — with the
/// right inserts, deletes, moves, updates and sections.
@Suite struct FetchedResultsControllerTests {
    @Entity final class Chore: ManagedObject {
        var name: String
        var priority = 0
        var done = false
    }

    static let model = ManagedObjectModel(Chore.self)

    func container(_ configuration: Configuration? = nil) async throws -> PersistentContainer {
        let container = PersistentContainer(name: "Chores", model: Self.model)
        let configuration = if let configuration { configuration } else { try await TestDatabase.fresh(prefix: "pd_frc") }
        try await container.loadPersistentStores(configuration: configuration,
                                                  options: .init(createSchemaIfMissing: true, persistentHistoryTracking: true))
        return container
    }

    func save(_ container: PersistentContainer, _ body: @escaping @Sendable (ManagedObjectContext) throws -> Void) async throws {
        try await container.performBackgroundTask { context in
            try body(context)
            try context.save()
        }
    }

    func chore(named name: String, in context: ManagedObjectContext) throws -> Chore {
        try context.fetch(FetchRequest<Chore>(predicate: try FetchPredicate(format: "name == %@", name)))[0]
    }

    @Test func followsSavesEditsAndBatchUpdatesWithSections() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        context.automaticallyMergesChangesFromParent = true
        let controller = try context.performAndWait {
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest<Chore>(predicate: try FetchPredicate(format: "done == NO"),
                                                  sortDescriptors: [FetchSortDescriptor(key: "priority"), FetchSortDescriptor(key: "name")]),
                managedObjectContext: context, sectionNameKeyPath: "priority")
            try controller.performFetch()
            return controller
        }
        let differences = StreamRecorder(context.performAndWait { controller.differences() })
        func names() -> [[String]] {
            context.performAndWait { (controller.sections ?? []).map { $0.objects.map(\.name) } }
        }
        func next(_ count: Int) async throws -> FetchedResultsDifference {
            try await Deadline.poll("difference \(count)") { differences.recorded.count >= count }
            return differences.recorded[count - 1]
        }
        #expect(names() == [])

        // 1. Another context saves three chores: inserted, in two sections.
        try await save(container) { context in
            for (name, priority) in [("a", 1), ("b", 1), ("c", 2)] {
                let chore = Chore(context: context)
                chore.name = name
                chore.priority = priority
            }
        }
        let first = try await next(1)
        #expect(first.changes(of: .insert).map(\.newIndexPath) == [IndexPath(item: 0, section: 0), IndexPath(item: 1, section: 0), IndexPath(item: 0, section: 1)])
        #expect(first.sectionChanges.map(\.name) == ["1", "2"])
        #expect(names() == [["a", "b"], ["c"]])

        // 2. Renaming a after b moves it; nothing else changes.
        try await save(container) { context in try self.chore(named: "a", in: context).name = "d" }
        let second = try await next(2)
        #expect(second.objectChanges.count == 1 && second.objectChanges[0].type == .move)
        #expect(names() == [["b", "d"], ["c"]])

        // 3. c is done: it leaves, and its section with it.
        try await save(container) { context in try self.chore(named: "c", in: context).done = true }
        let third = try await next(3)
        #expect(third.changes(of: .delete).map(\.indexPath) == [IndexPath(item: 0, section: 1)])
        #expect(third.sectionChanges == [FetchedResultsSectionChange(type: .delete, sectionIndex: 1, name: "2")])
        #expect(names() == [["b", "d"]])

        // 4. b goes to priority 3: a move into a new section.
        try await save(container) { context in try self.chore(named: "b", in: context).priority = 3 }
        let fourth = try await next(4)
        #expect(fourth.objectChanges.map(\.type) == [.move])
        #expect(fourth.objectChanges[0].indexPath == IndexPath(item: 0, section: 0))
        #expect(fourth.objectChanges[0].newIndexPath == IndexPath(item: 0, section: 1))
        #expect(names() == [["d"], ["b"]])

        // 5. An edit in the controller's own context, unsaved: an update in place.
        try await context.perform { try self.chore(named: "d", in: context).done = false; try self.chore(named: "d", in: context).name = "e" }
        let fifth = try await next(5)
        #expect(fifth.objectChanges.map(\.type) == [.update])
        #expect(names() == [["e"], ["b"]])
        try await context.perform { try context.save() }

        // 6. A batch update merged into the context: both refreshed, all in section 5 now.
        var update = BatchUpdateRequest(entity: Chore.self, propertiesToUpdate: ["priority": 5])
        update.contextsToMerge = [context]
        _ = try await context.execute(update)
        let sixth = try await next(6)
        #expect(Set(sixth.sectionChanges.map(\.type)) == [.insert, .delete])
        #expect(sixth.sectionNames == ["5"])
        #expect(names() == [["b", "e"]])

        // 7. Another coordinator (as another process would) inserts one and deletes one.
        let other = try await self.container(container.persistentStoreCoordinator.connectionPool.configuration)
        try await save(other) { context in
            let chore = Chore(context: context)
            chore.name = "a"
            chore.priority = 5
            context.delete(try self.chore(named: "b", in: context))
        }
        let seventh = try await next(7)
        #expect(seventh.changes(of: .insert).count == 1 && seventh.changes(of: .delete).count == 1)
        #expect(names() == [["a", "e"]])
        #expect(seventh.objectIDs.flatMap { $0 }.count == 2)
        context.performAndWait {
            let a = controller.object(at: IndexPath(item: 0, section: 0))
            #expect(a.name == "a" && controller.indexPath(forObject: a) == IndexPath(item: 0, section: 0))
        }

        // 8. It inserts a chore that matches and one that does not: the controller loaded both
        // to judge them, and keeps only the one it shows registered in its context.
        try await save(other) { context in
            for (name, done) in [("f", false), ("g", true)] {
                let chore = Chore(context: context)
                chore.name = name
                chore.priority = 5
                chore.done = done
            }
        }
        let eighth = try await next(8)
        #expect(eighth.changes(of: .insert).count == 1)
        #expect(names() == [["a", "e", "f"]])
        let (shown, hidden) = try await other.performBackgroundTask { context in
            (try self.chore(named: "f", in: context).objectID, try self.chore(named: "g", in: context).objectID)
        }
        context.performAndWait {
            #expect(context.registeredObject(for: shown) != nil)
            #expect(context.registeredObject(for: hidden) == nil)
        }
        await other.persistentStoreCoordinator.close()
        await container.persistentStoreCoordinator.close()
    }

    @Test func aSectionKeyThatIsNotTheFirstSortKeyIsRefused() async throws {
        let container = try await container()
        let context = container.newBackgroundContext()
        let error = context.performAndWait { () -> (any Error)? in
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest<Chore>(sortDescriptors: [FetchSortDescriptor(key: "name")]),
                managedObjectContext: context, sectionNameKeyPath: "priority")
            do { try controller.performFetch() } catch { return error }
            return nil
        }
        #expect(error.map { "\($0)" }?.contains("first sort descriptor") == true)
        await container.persistentStoreCoordinator.close()
    }

    @Test func theLongestRunThatKeptItsOrderIsFound() {
        #expect(FetchedResultsController<Chore>.longestIncreasingRun([0, 1, 2]) == [0, 1, 2])
        #expect(FetchedResultsController<Chore>.longestIncreasingRun([1, 0]).count == 1)
        #expect(FetchedResultsController<Chore>.longestIncreasingRun([3, 0, 1, 2]) == [1, 2, 3])
        #expect(FetchedResultsController<Chore>.longestIncreasingRun([]) == [])
    }
}
