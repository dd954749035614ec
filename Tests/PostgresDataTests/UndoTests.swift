import Foundation
import PostgresData
import PostgresDataTesting
import Testing

/// Undo and redo: each event's changes are one group; values, relationships (with their
/// inverses), inserts and deletes (with their delete rules) go back and forth; saves end
/// nothing; rollback and reset empty the stack.
@Suite struct UndoTests {
    @Test func eventsUndoAndRedoInsertsValuesAndDeletesAndTheSaveWritesWhatIsLeft() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        let names = try await context.perform { () throws -> [String] in
            let manager = UndoManager()
            context.undoManager = manager
            let list = TodoList(context: context)
            list.title = "Groceries"
            let milk = Item(context: context)
            milk.name = "milk"
            milk.list = list
            let bread = Item(context: context)
            bread.name = "bread"
            bread.list = list
            context.processPendingChanges()               // event 1: three inserts
            milk.name = "oat milk"
            milk.weight = 2
            context.processPendingChanges()               // event 2: two values of one object
            context.delete(bread)
            context.processPendingChanges()               // event 3: a delete of an unsaved object
            #expect(bread.managedObjectContext == nil && list.items == [milk])

            context.undo()
            #expect(bread.managedObjectContext === context && bread.isInserted && list.items == [milk, bread])
            context.undo()
            #expect(milk.name == "milk" && milk.weight == 0)
            context.undo()
            #expect(context.insertedObjects.isEmpty && context.registeredObjects.isEmpty && !context.hasChanges)
            #expect(!manager.canUndo && manager.canRedo)

            context.redo()
            #expect(context.insertedObjects.count == 3 && list.items == [milk, bread] && milk.name == "milk")
            context.redo()
            #expect(milk.name == "oat milk" && milk.weight == 2)
            context.undo()
            context.redo()
            #expect(milk.name == "oat milk")
            try context.save()
            return try context.fetch(FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])).map(\.name)
        }
        // The third event (bread's deletion) was undone and not redone: bread is saved.
        #expect(names == ["bread", "oat milk"])
        #expect(try await container.rawStrings("SELECT i.name || ' ' || i.weight || ' ' || l.title FROM item i JOIN todo_list l ON l.id = i.list_id ORDER BY 1")
                == ["bread 0 Groceries", "oat milk 2 Groceries"])
        await container.persistentStoreCoordinator.close()
    }

    @Test func relationshipEditsUndoWithTheirInversesAndCascadesComeBack() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        context.retainsRegisteredObjects = true
        try await context.perform {
            let home = TodoList(context: context)
            home.title = "home"
            let work = TodoList(context: context)
            work.title = "work"
            for name in ["a", "b", "c"] {
                let item = Item(context: context)
                item.name = name
                item.list = home
            }
            let player = Player(context: context)
            player.name = "p"
            let tag = Tag(context: context)
            tag.label = "t"
            try context.save()
        }
        let outcome = try await context.perform { () throws -> [String] in
            context.undoManager = UndoManager()
            let lists = try context.fetch(FetchRequest<TodoList>(sortDescriptors: [FetchSortDescriptor(key: "title")]))
            let (home, work) = (lists[0], lists[1])
            let a = try #require(home.items.first { $0.name == "a" })
            let player = try #require(try context.fetch(FetchRequest<Player>()).first)
            let tag = try #require(try context.fetch(FetchRequest<Tag>()).first)

            // A to-one set moves the item between the inverse to-many sets.
            a.list = work
            player.tags = [tag]
            context.processPendingChanges()
            #expect(work.items == [a] && home.items.count == 2 && tag.players == [player])
            context.undo()
            #expect(a.list === home && work.items.isEmpty && home.items.count == 3)
            #expect(player.tags.isEmpty && tag.players.isEmpty)
            #expect(!context.hasChanges, "undone back to the saved state")
            context.redo()
            #expect(a.list === work && work.items == [a] && tag.players == [player])

            // A cascading delete comes back whole.
            context.delete(home)
            context.processPendingChanges()
            #expect(context.deletedObjects.count == 3 && home.isDeleted)
            context.undo()
            #expect(context.deletedObjects.isEmpty && !home.isDeleted && home.items.count == 2)
            try context.save()
            return try context.fetch(FetchRequest<Item>(sortDescriptors: [FetchSortDescriptor(key: "name")])).map { "\($0.name) \($0.list?.title ?? "-")" }
        }
        #expect(outcome == ["a work", "b home", "c home"])
        #expect(try await container.rawStrings("SELECT i.name || ' ' || l.title FROM item i JOIN todo_list l ON l.id = i.list_id ORDER BY 1")
                == ["a work", "b home", "c home"])
        #expect(try await container.rawIntegers("SELECT count(*) FROM player_tags") == [1])
        await container.persistentStoreCoordinator.close()
    }

    @Test func aSaveEndsNothingGroupsSpanEventsAndRollbackEmptiesTheStack() async throws {
        let container = try await makeContainer()
        let id = try await container.saveItem(named: "kept")
        let context = container.newBackgroundContext()
        context.retainsRegisteredObjects = true
        try await context.perform {
            let manager = UndoManager()
            context.undoManager = manager
            let item = try #require(try context.existingObject(with: id) as? Item)
            item.weight = 5
            context.processPendingChanges()
            try context.save()
            // Undoing after the save changes the object again, for the next save.
            context.undo()
            #expect(item.weight == 0 && item.hasChanges && context.updatedObjects == [item])
            try context.save()
            context.redo()
            #expect(item.weight == 5)
            try context.save()

            // A group of the app's own spans events.
            manager.beginUndoGrouping()
            item.name = "one"
            context.processPendingChanges()
            item.done = true
            context.processPendingChanges()
            manager.endUndoGrouping()
            context.undo()
            #expect(item.name == "kept" && !item.done && !item.hasChanges)

            item.notes = "to roll back"
            context.rollback()
            #expect(!manager.canUndo && !manager.canRedo && item.notes == nil)
        }
        #expect(try await container.rawStrings("SELECT name || ' ' || weight || ' ' || done FROM item") == ["kept 5 false"])
        await container.persistentStoreCoordinator.close()
    }

    @Test func theUndoManagerKeepsFoundationsRules() {
        final class Counter { var value = 0 }
        let counter = Counter()
        let manager = UndoManager()
        func add(_ amount: Int) {
            counter.value += amount
            manager.registerUndo(withTarget: counter) { _ in add(-amount) }
        }
        add(1)
        add(2)
        #expect(counter.value == 3 && manager.canUndo && !manager.canRedo)
        manager.undo()
        #expect(counter.value == 1 && manager.canRedo)
        manager.redo()
        #expect(counter.value == 3)
        manager.undo()
        add(10)                                     // a new change drops the redo stack
        #expect(counter.value == 11 && !manager.canRedo)

        manager.levelsOfUndo = 2
        add(100)
        add(1000)
        manager.undo(); manager.undo(); manager.undo()
        #expect(counter.value == 11, "only two levels were kept")

        manager.disableUndoRegistration()
        add(5)
        manager.enableUndoRegistration()
        manager.removeAllActions()
        #expect(!manager.canUndo && !manager.canRedo && manager.isUndoRegistrationEnabled)
        manager.beginUndoGrouping()
        add(1)
        manager.setActionName("Add")
        add(1)
        manager.endUndoGrouping()
        #expect(manager.undoActionName == "Add" && manager.groupingLevel == 0)
        manager.undo()
        #expect(counter.value == 16 && manager.redoActionName == "Add")
        manager.removeAllActions(withTarget: counter)
        #expect(!manager.canRedo)
    }
}
