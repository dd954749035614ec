import Foundation
import PostgresClient
import PostgresData
import Testing

@Suite struct RelationshipTests {
    @Test func settingOneSideMaintainsTheInverse() async throws {
        let container = try await makeContainer()
        let (firstID, secondID, itemID) = try await container.performBackgroundTask { context in
            let first = TodoList(context: context)
            first.title = "first"
            let second = TodoList(context: context)
            second.title = "second"
            let item = Item(context: context)
            item.name = "moving"
            item.list = first
            #expect(first.items == [item])
            item.list = second
            #expect(first.items.isEmpty && second.items == [item])
            try context.save()
            return (first.objectID, second.objectID, item.objectID)
        }
        try await container.performBackgroundTask { context in
            let first = try #require(context.object(with: firstID) as? TodoList)
            let second = try #require(context.object(with: secondID) as? TodoList)
            let item = try #require(context.object(with: itemID) as? Item)
            #expect(second.items == [item] && first.items.isEmpty)
            // The to-many side moves it back.
            first.items = [item]
            #expect(item.list === first && second.items.isEmpty)
            try context.save()
        }
        #expect(try await container.rawIntegers("SELECT list_id FROM item") == [firstID.primaryKey!])
    }

    @Test func cascadeDeletesTheDestinationsInTheContextAndTheDatabase() async throws {
        let container = try await makeContainer()
        let listID = try await container.performBackgroundTask { context in
            let list = TodoList(context: context)
            list.title = "doomed"
            for index in 0..<3 {
                let item = Item(context: context)
                item.name = "i\(index)"
                item.list = list
            }
            let other = Item(context: context)
            other.name = "survivor"
            try context.save()
            return list.objectID
        }
        try await container.performBackgroundTask { context in
            let list = try context.existingObject(with: listID)
            context.delete(list)
            #expect(context.deletedObjects.count == 4)
            try context.save()
        }
        #expect(try await container.rawStrings("SELECT name FROM item") == ["survivor"])
        #expect(try await container.rawIntegers("SELECT count(*) FROM todo_list") == [0])
    }

    @Test func denyRefusesTheDeletionWithAValidationErrorAndDeletesNothing() async throws {
        let container = try await makeContainer()
        let teamID = try await container.performBackgroundTask { context in
            let team = Team(context: context)
            team.name = "Lions"
            let player = Player(context: context)
            player.name = "Ann"
            player.team = team
            try context.save()
            return team.objectID
        }
        let context = container.newBackgroundContext()
        let error = await captureDataError {
            try await context.perform {
                context.delete(try context.existingObject(with: teamID))
                try context.save()
            }
        }
        guard case .validation(let failures)? = error else {
            Issue.record("expected a validation error, got \(String(describing: error))")
            return
        }
        #expect(failures.first?.key == "players" && failures.first?.reason.contains("delete rule is deny") == true)
        #expect(try await container.rawIntegers("SELECT count(*) FROM team") == [1])
        // Batch deletes that bypass contexts meet the same rule in the schema.
        do {
            try await container.rawExecute("DELETE FROM team")
            Issue.record("ON DELETE RESTRICT must refuse the delete")
        } catch let error as PostgresError {
            #expect(error.sqlState?.rawValue == "23503" && error.constraintName == "player_team_id_fkey")
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM team") == [1])
    }

    @Test func nullifyClearsTheInverseWhenAnObjectIsDeleted() async throws {
        let container = try await makeContainer()
        let (teamID, playerID) = try await container.performBackgroundTask { context in
            let team = Team(context: context)
            team.name = "Bears"
            let player = Player(context: context)
            player.name = "Bob"
            player.team = team
            try context.save()
            return (team.objectID, player.objectID)
        }
        try await container.performBackgroundTask { context in
            let team = try #require(try context.existingObject(with: teamID) as? Team)
            #expect(team.players.count == 1)
            context.delete(try context.existingObject(with: playerID))
            #expect(team.players.isEmpty)
            context.delete(team)
            try context.save()
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM team") == [0])
    }

    @Test func manyToManyRelationshipsUseTheJoinTable() async throws {
        let container = try await makeContainer()
        let (playerID, tagIDs) = try await container.performBackgroundTask { context in
            let player = Player(context: context)
            player.name = "Cy"
            let tags = ["fast", "tall", "left"].map { label -> Tag in
                let tag = Tag(context: context)
                tag.label = label
                return tag
            }
            player.tags = Set(tags[0...1])
            #expect(tags[0].players == [player])
            tags[2].players.insert(player)
            #expect(player.tags.count == 3)
            try context.save()
            return (player.objectID, tags.map(\.objectID))
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM player_tags") == [3])
        try await container.performBackgroundTask { context in
            let player = try #require(context.object(with: playerID) as? Player)
            #expect(Set(player.tags.map(\.objectID)) == Set(tagIDs))
            let fast = try #require(context.object(with: tagIDs[0]) as? Tag)
            player.tags.remove(fast)
            #expect(fast.players.isEmpty)
            context.delete(context.object(with: tagIDs[1]))
            try context.save()
        }
        #expect(try await container.rawIntegers("SELECT tag_id FROM player_tags") == [tagIDs[2].primaryKey!])
    }

    @Test func loadingChecksTheSchemaAndListsEachDifference() async throws {
        let container = try await makeContainer()
        try await container.rawExecute("ALTER TABLE item DROP COLUMN notes; ALTER TABLE item ALTER COLUMN weight TYPE integer; DROP TABLE player_tags; ALTER TABLE profile DROP CONSTRAINT profile_code_pattern")
        let configuration = try container.persistentStoreCoordinator.connectionPool.configuration
        let second = PersistentContainer(name: "Second", model: testModel)
        let error = await captureDataError { try await second.loadPersistentStores(configuration: configuration) }
        guard case .schemaMismatch(let differences)? = error else {
            Issue.record("expected a schema mismatch, got \(String(describing: error))")
            return
        }
        #expect(differences.count == 4, "\(differences)")
        #expect(differences.contains("constraint \"profile_code_pattern\" on \"profile\" is missing (Profile.code: code matches [A-Z]{3}): the database does not enforce it"))
        #expect(differences.contains("column \"item\".\"notes\" (text) is missing"))
        #expect(differences.contains("column \"item\".\"weight\" is integer, the model says bigint"))
        #expect(differences.contains("table \"player_tags\" is missing"))
    }
}
