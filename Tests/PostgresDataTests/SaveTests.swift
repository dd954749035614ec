import Foundation
import PostgresClient
import PostgresData
import Testing

@Suite struct SaveTests {
    @Test func insertedObjectsLandInOneTransactionWithPermanentIDs() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        let ids = try await context.perform {
            let list = TodoList(context: context)
            list.title = "Groceries"
            var items: [Item] = []
            for name in ["milk", "bread", "eggs"] {
                let item = Item(context: context)
                item.name = name
                item.list = list
                items.append(item)
            }
            #expect(context.hasChanges)
            #expect(items[0].objectID.isTemporaryID)
            #expect(list.items.count == 3)
            try context.save()
            #expect(!context.hasChanges)
            #expect(!items[0].objectID.isTemporaryID)
            #expect(list.items.count == 3)
            return items.map(\.objectID) + [list.objectID]
        }
        #expect(ids.allSatisfy { !$0.isTemporaryID })
        #expect(try await container.rawStrings("SELECT name FROM item ORDER BY name") == ["bread", "eggs", "milk"])
        let listKey = try #require(ids.last?.primaryKey)
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE list_id = \(listKey)") == [3])
        #expect(try await container.rawIntegers("SELECT weight FROM item") == [0, 0, 0])
    }

    @Test func updatesAndDeletesAreSavedAndFetchedObjectsKeepUnsavedChanges() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        try await context.perform {
            for index in 0..<5 {
                let item = Item(context: context)
                item.name = "item \(index)"
                item.weight = index
            }
            try context.save()
            let items = try context.fetch(FetchRequest<Item>())
            #expect(items.count == 5)
            items[0].done = true
            items[1].weight = 100
            context.delete(items[4])
            #expect(items[0].changedValues()["done"] as? Bool == true)
            #expect(items[0].committedValues(forKeys: ["done"])["done"] as? Bool == false)
            #expect(context.updatedObjects.count == 2 && context.deletedObjects.count == 1)
            // A second fetch returns the same objects with their unsaved changes.
            let again = try context.fetch(FetchRequest<Item>())
            #expect(again[0] === items[0] && again[0].done)
            try context.save()
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [4])
        let weights = try await container.rawIntegers("SELECT weight FROM item ORDER BY id")
        #expect(weights == [0, 100, 2, 3], "\(weights)")
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE done") == [1])
    }

    @Test func everyAttributeTypeRoundTrips() async throws {
        let container = try await makeContainer()
        let settings = Settings(theme: "dark", fontSize: 14)
        let token = UUID()
        let id = try await container.performBackgroundTask { context in
            let profile = Profile(context: context)
            profile.id16 = -7
            profile.id32 = 1 << 20
            profile.ratio = 0.125
            profile.small = 1.5
            profile.price = Decimal(string: "12345.678")!
            profile.avatar = Data([1, 2, 3])
            profile.token = token
            profile.homepage = URL(string: "https://example.com/a")
            profile.settings = settings
            profile.code = "XYZ"
            try context.save()
            return profile.objectID
        }
        try await container.performBackgroundTask { context in
            let profile = try #require(try context.existingObject(with: id) as? Profile)
            #expect(profile.id16 == -7 && profile.id32 == 1 << 20 && profile.ratio == 0.125 && profile.small == 1.5)
            #expect(profile.price == Decimal(string: "12345.678")!)
            #expect(profile.avatar == Data([1, 2, 3]) && profile.token == token)
            #expect(profile.homepage == URL(string: "https://example.com/a"))
            #expect(profile.settings == settings && profile.code == "XYZ")
        }
        #expect(try await container.rawStrings("SELECT settings->>'theme' FROM profile") == ["dark"])
    }

    @Test func aConstraintFailureInTheMiddleLeavesTheDatabaseUnchangedAndTheContextDirty() async throws {
        let container = try await makeContainer()
        try await container.rawExecute("INSERT INTO team (name) VALUES ('Lions')")
        let context = container.newBackgroundContext()
        let error = try await context.perform { () throws -> PostgresDataError? in
            for name in ["Tigers", "Lions", "Bears"] {
                let team = Team(context: context)
                team.name = name
            }
            let player = Player(context: context)
            player.name = "Ann"
            do {
                try context.save()
                return nil
            } catch let error as PostgresDataError {
                #expect(context.hasChanges)
                #expect(context.insertedObjects.count == 4)
                return error
            }
        }
        // A unique key taken: the conflict names the key, the row holding it and the object.
        guard case .constraintConflict(let conflicts)? = error, let conflict = conflicts.first else {
            Issue.record("expected a uniqueness conflict, got \(String(describing: error))")
            return
        }
        #expect(conflicts.count == 1)
        #expect(conflict.constraintName == "team_name_key")
        #expect(conflict.entityName == "Team" && conflict.constraint == ["name"])
        #expect(conflict.constraintValues["name"] == .string("Lions"))
        #expect(conflict.databaseValues?["name"] == .string("Lions"))
        #expect(error?.sqlState == "23505")
        #expect(error?.description.contains("Team (name = Lions) must be unique (constraint team_name_key)") == true)
        #expect(try await container.rawIntegers("SELECT count(*) FROM team") == [1])
        #expect(try await container.rawIntegers("SELECT count(*) FROM player") == [0])
        // Fix the offending object and retry: everything lands.
        try await context.perform {
            let lions = context.insertedObjects.compactMap { $0 as? Team }.first { $0.name == "Lions" }!
            lions.name = "Lynxes"
            try context.save()
        }
        #expect(try await container.rawStrings("SELECT name FROM team ORDER BY name") == ["Bears", "Lions", "Lynxes", "Tigers"])
        #expect(try await container.rawIntegers("SELECT count(*) FROM player") == [1])
    }

    @Test func aLargeSaveFailingInTheDatabaseKeepsItsKeysAndARetryInsertsWithThem() async throws {
        let container = try await makeContainer()
        try await container.rawExecute("INSERT INTO team (name) VALUES ('t-300')")
        let context = container.newBackgroundContext()
        // More objects than one round trip carries: the keys are allocated while the hooks
        // run, and the objects take them as permanent IDs while the COPY runs.
        let (error, keys) = try await context.perform { () throws -> (PostgresDataError?, [String: Int64]) in
            let teams = (0..<600).map { index -> Team in
                let team = Team(context: context)
                team.name = "t-\(index)"
                return team
            }
            var caught: PostgresDataError?
            do { try context.save() } catch let error as PostgresDataError { caught = error }
            #expect(context.insertedObjects.count == 600)
            #expect(teams.allSatisfy { $0.isInserted && !$0.objectID.isTemporaryID })
            return (caught, Dictionary(uniqueKeysWithValues: teams.map { ($0.name, $0.objectID.primaryKey ?? 0) }))
        }
        guard case .constraintConflict(let conflicts)? = error else {
            Issue.record("expected a uniqueness conflict, got \(String(describing: error))")
            return
        }
        #expect(conflicts.map(\.constraintValues) == [["name": .string("t-300")]])
        #expect(conflicts.first?.conflictingObjectIDs.map(\.primaryKey) == [keys["t-300"]])
        #expect(Set(keys.values).count == 600)
        #expect(try await container.rawIntegers("SELECT count(*) FROM team") == [1])
        try await context.perform {
            let taken = context.insertedObjects.compactMap { $0 as? Team }.first { $0.name == "t-300" }
            taken?.name = "t-300b"
            try context.save()
        }
        let rows = try await container.rawStrings("SELECT id || ' ' || name FROM team WHERE name <> 't-300'")
        #expect(Set(rows) == Set(keys.map { name, key in "\(key) \(name == "t-300" ? "t-300b" : name)" }))
    }

    @Test func validationReportsEveryFailureBeforeAnythingIsSent() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        let before = container.persistentStoreCoordinator.requestCount
        let error = await captureDataError {
            try await context.perform {
                let empty = Item(context: context)
                empty.name = ""
                let heavy = Item(context: context)
                heavy.name = "anvil"
                heavy.weight = 5000
                let profile = Profile(context: context)
                profile.code = "abc"
                try context.save()
            }
        }
        guard case .validation(let failures)? = error else {
            Issue.record("expected validation failures, got \(String(describing: error))")
            return
        }
        #expect(failures.count == 3)
        #expect(failures.contains { $0.key == "name" && $0.reason.contains("shorter than the minimum 1") })
        #expect(failures.contains { $0.key == "weight" && $0.reason.contains("above the maximum 1000") })
        #expect(failures.contains { $0.key == "code" && $0.reason.contains("does not match") })
        #expect(container.persistentStoreCoordinator.requestCount == before)
        #expect(try await container.rawIntegers("SELECT count(*) FROM item") == [0])
    }

    @Test func theDatabaseEnforcesTheModelsChecksToo() async throws {
        let container = try await makeContainer()
        await #expect(throws: PostgresError.self) {
            try await container.rawExecute("INSERT INTO item (name, created_at, weight) VALUES ('x', now(), -1)")
        }
        let messages = try await container.persistentStoreCoordinator.connectionPool.withConnection { connection in
            do {
                _ = try await connection.query("INSERT INTO profile (code, id16, id32, ratio, small, price) VALUES ('abc', 0, 0, 0, 0, 0)")
                return ""
            } catch let error as PostgresError {
                return "\(error.sqlState?.rawValue ?? "") \(error.constraintName ?? "")"
            }
        }
        #expect(messages == "23514 profile_code_pattern")
    }

    @Test func obtainPermanentIDsAllocatesKeysInOneRoundTripBeforeTheSave() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        let coordinator = container.persistentStoreCoordinator
        try await context.perform {
            let items = (0..<50).map { index -> Item in
                let item = Item(context: context)
                item.name = "n\(index)"
                return item
            }
            let list = TodoList(context: context)
            list.title = "L"
            items[0].list = list
            let before = coordinator.requestCount
            try context.obtainPermanentIDs(for: items + [list])
            #expect(coordinator.requestCount == before + 1)
            #expect(items.allSatisfy { !$0.objectID.isTemporaryID })
            let keys = items.map { $0.objectID.primaryKey! }
            #expect(Set(keys).count == 50)
            #expect(items[0].list === list)
            try context.save()
            #expect(items.map { $0.objectID.primaryKey! } == keys)
            let uri = items[0].objectID.uriRepresentation()
            #expect(uri.absoluteString == "x-postgresdata://Item/p\(keys[0])")
            #expect(coordinator.managedObjectID(forURIRepresentation: uri) == items[0].objectID)
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM item WHERE list_id IS NOT NULL") == [1])
    }
}

@Suite struct DeferredConstraintTests {
    @Test func aForeignKeyCheckedAtCommitFailsTheWholeSaveAndNamesTheRule() async throws {
        let container = try await makeContainer()
        let context = container.newBackgroundContext()
        let missingTeam = try #require(container.persistentStoreCoordinator.managedObjectID(
            forURIRepresentation: URL(string: "x-postgresdata://Team/p424242")!))
        let error = await captureDataError {
            try await context.perform {
                let keeper = Player(context: context)
                keeper.name = "kept"
                let player = Player(context: context)
                player.name = "orphan"
                player.team = context.object(with: missingTeam) as? Team
                try context.save()
            }
        }
        guard case .constraintViolation(let constraint, let name, let underlying)? = error else {
            Issue.record("expected a constraint violation, got \(String(describing: error))")
            return
        }
        #expect(name == "player_team_id_fkey" && underlying.sqlState?.rawValue == "23503")
        #expect(constraint?.rule == "team must be an existing Team")
        #expect(try await container.rawIntegers("SELECT count(*) FROM player") == [0])
        let pending = await context.perform { context.insertedObjects.count }
        #expect(pending == 2)
    }
}
