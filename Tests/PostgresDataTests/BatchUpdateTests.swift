import Foundation
import PostgresData
import Testing

@Entity final class Choice: ManagedObject {
    var name: String
    @Attribute(minValue: 0) var weight = 0
    var note: String?
    var decidedAt: Date?
}

/// Batch updates: one statement, validated, version-changing, merged into contexts.
@Suite struct BatchUpdateTests {
    func seeded(_ count: Int = 1_000) async throws -> PersistentContainer {
        let container = try await makeContainer()
        try await container.performBackgroundTask { context in
            for index in 0..<count {
                let choice = Choice(context: context)
                choice.name = "choice \(index)"
                choice.weight = index % 10 + 2
                choice.note = index % 2 == 0 ? "even" : nil
            }
            try context.save()
        }
        return container
    }

    /// The seeds' scenario: every weight set to 1; the main context shows it after the merge.
    @Test func everyWeightSetToOneAndMergedIntoTheMainContext() async throws {
        let container = try await seeded()
        let view = container.viewContext
        let coordinator = container.persistentStoreCoordinator
        let seen = try await view.perform { () throws -> [ManagedObjectID] in
            var request = FetchRequest<Choice>(sortDescriptors: [FetchSortDescriptor(key: "name")])
            request.fetchLimit = 5
            let choices = try view.fetch(request)
            #expect(choices.allSatisfy { $0.weight > 1 })
            return choices.map(\.objectID)
        }
        var update = BatchUpdateRequest(entity: Choice.self, propertiesToUpdate: ["weight": 1])
        update.resultType = .updatedObjectIDs
        update.contextsToMerge = [view]
        let before = coordinator.requestCount
        let result = try await container.newBackgroundContext().execute(update)
        #expect(result.count == 1_000 && result.objectIDs.count == 1_000)
        #expect(coordinator.requestCount == before + 1)
        let weights = await view.perform { seen.map { (view.object(with: $0) as! Choice).weight } }
        #expect(weights == [1, 1, 1, 1, 1])
        // The five merged objects were re-read, not the table.
        #expect(coordinator.requestCount <= before + 1 + 5)
        #expect(try await container.rawIntegers("SELECT count(*) FROM choice WHERE weight <> 1") == [0])
    }

    @Test func rulesAreCheckedBeforeSendingAndByTheDatabase() async throws {
        let container = try await seeded(20)
        let context = container.newBackgroundContext()
        let coordinator = container.persistentStoreCoordinator
        let before = coordinator.requestCount
        let constant = await captureDataError { _ = try await context.execute(BatchUpdateRequest(entity: Choice.self, propertiesToUpdate: ["weight": -1])) }
        #expect("\(constant!)".contains("batch update of Choice: weight = -1 breaks the model (weight is -1.0, below the minimum 0.0); nothing was sent"))
        #expect(coordinator.requestCount == before)
        let required = await captureDataError { _ = try await context.execute(BatchUpdateRequest(entity: Choice.self, propertiesToUpdate: ["name": nil])) }
        #expect("\(required!)".contains("is required"))
        let unknown = await captureDataError { _ = try await context.execute(BatchUpdateRequest(entity: Choice.self, propertiesToUpdate: ["wieght": 1])) }
        #expect("\(unknown!)".contains("Did you mean \"weight\""))
        // An expression is checked by the CHECK constraint: the whole batch fails, nothing changes.
        let expression = await captureDataError {
            _ = try await context.execute(BatchUpdateRequest(entity: Choice.self, propertiesToUpdate: ["weight": try .expression("weight - 5")]))
        }
        guard case .constraintViolation(let constraint, let name, _)? = expression else {
            Issue.record("expected a constraint violation, got \(String(describing: expression))")
            return
        }
        #expect(expression?.sqlState == "23514" && name == "choice_weight_min")
        #expect(constraint?.keys == ["weight"] && constraint?.entityName == "Choice" && constraint?.rule == "weight >= 0")
        #expect(try await container.rawIntegers("SELECT sum(weight)::bigint FROM choice") == [Int64((0..<20).reduce(0) { $0 + $1 % 10 + 2 })])
    }

    @Test func expressionsNullsAndEveryResultType() async throws {
        let container = try await seeded(4)
        let context = container.newBackgroundContext()
        var update = BatchUpdateRequest(entity: Choice.self, predicate: try FetchPredicate(format: "weight >= 3"),
                                        propertiesToUpdate: ["weight": try .expression("weight * 2 + %@", 1), "note": try .expression("note + '!'"),
                                                             "decidedAt": .now])
        update.resultType = .updatedObjects
        let result = try await context.execute(update)
        #expect(result.count == 3)
        let byName = try await context.perform { () throws -> [String: [String: AttributeValue]] in
            var values: [String: [String: AttributeValue]] = [:]
            for (id, changed) in result.updatedValues { values[(try context.existingObject(with: id) as! Choice).name] = changed }
            return values
        }
        #expect(byName["choice 1"]?["weight"] == .integer(7))
        #expect(byName["choice 2"]?["note"] == .string("even!"))
        #expect(byName["choice 1"]?["note"] == .null)            // NULL + '!' stays NULL
        if case .date(let date)? = byName["choice 3"]?["decidedAt"] { #expect(abs(date.timeIntervalSinceNow) < 60) } else { Issue.record("no date") }
        #expect(try await container.rawIntegers("SELECT count(*) FROM choice WHERE decided_at IS NULL") == [1])

        var counted = BatchUpdateRequest(entity: Choice.self, propertiesToUpdate: ["note": nil])
        counted.resultType = .updatedObjectsCount
        #expect(try await context.execute(counted).count == 4)
        counted.resultType = .statusOnly
        let status = try await context.execute(counted)
        #expect(status.objectIDs.isEmpty)
        #expect(try await container.rawIntegers("SELECT count(*) FROM choice WHERE note IS NOT NULL") == [0])
    }

    @Test func aStaleObjectGetsAConflictNotAnOverwrite() async throws {
        let container = try await seeded(3)
        let context = container.newBackgroundContext()
        try await context.perform { () throws in
            let choices = try context.fetch(FetchRequest<Choice>(entityName: "Choice"))
            choices[0].name = "renamed"
            _ = try context.execute(BatchUpdateRequest(entity: Choice.self, propertiesToUpdate: ["weight": 9]))
            #expect(throws: PostgresDataError.self) { try context.save() }
            #expect(choices[0].hasChanges)
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM choice WHERE weight = 9") == [3])
        #expect(try await container.rawStrings("SELECT name FROM choice WHERE name = 'renamed'").isEmpty)
    }

    @Test func toOneRelationshipsTakeAnIDOrNil() async throws {
        let container = try await makeContainer()
        let (listID, itemID) = try await container.performBackgroundTask { context in
            let list = TodoList(context: context)
            list.title = "L"
            let item = Item(context: context)
            item.name = "i"
            try context.save()
            return (list.objectID, item.objectID)
        }
        let context = container.newBackgroundContext()
        var update = BatchUpdateRequest(entity: Item.self, propertiesToUpdate: ["list": try BatchUpdateValue(listID)])
        update.resultType = .updatedObjects
        let result = try await context.execute(update)
        #expect(result.updatedValues[itemID]?["list"] == .object(listID))
        let cleared = try await context.execute(BatchUpdateRequest(entity: Item.self, predicate: try FetchPredicate(format: "list.title == 'L'"),
                                                                   propertiesToUpdate: ["list": nil]))
        #expect(cleared.objectIDs.isEmpty && cleared.updatedValues.isEmpty)     // status only: nothing read back
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE list_id IS NULL") == [1])
        let wrong = await captureDataError { _ = try await context.execute(BatchUpdateRequest(entity: Item.self, propertiesToUpdate: ["list": try BatchUpdateValue(itemID)])) }
        #expect("\(wrong!)".contains("is not a saved TodoList"))
    }
}
