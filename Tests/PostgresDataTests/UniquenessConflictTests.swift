import Foundation
import PostgresClient
@testable import PostgresData
import PostgresDataTesting
import Testing

@Entity final class Member: ManagedObject {
    @Attribute(.unique) var email: String = ""
    var name: String = ""
    var visits: Int = 0
    @Relationship(deleteRule: .cascade, inverse: \Visit.member) var visitLog: Set<Visit>
    @Relationship(inverse: \Badge.members) var badges: Set<Badge>
}

@Entity final class Visit: ManagedObject {
    var page: String = ""
    var member: Member?
}

@Entity(uniquenessConstraints: [["kind", "level"]]) final class Badge: ManagedObject {
    var kind: String = ""
    var level: Int = 0
    var title: String = ""
    var members: Set<Member>
}

let uniquenessModel = ManagedObjectModel(Member.self, Visit.self, Badge.self)

/// Uniqueness conflicts at save (Core Data's `NSConstraintConflict`): thrown with both
/// sides under the `error` policy, resolved in the save's own round trip under the others.
@Suite struct UniquenessConflictTests {
    func container(history: Bool = false) async throws -> PersistentContainer {
        let configuration = try await TestDatabase.fresh(prefix: "pd_unique")
        let container = PersistentContainer(name: "Members", model: uniquenessModel)
        try await container.loadPersistentStores(
            configuration: configuration, options: .init(createSchemaIfMissing: true, persistentHistoryTracking: history))
        return container
    }

    /// Saves a member `email` with `visits` from a context of its own; returns its ID.
    func saveMember(_ email: String, name: String, visits: Int, in container: PersistentContainer) async throws -> ManagedObjectID {
        try await container.performBackgroundTask { context in
            let member = Member(context: context)
            member.email = email
            member.name = name
            member.visits = visits
            try context.save()
            return member.objectID
        }
    }

    func rows(_ container: PersistentContainer) async throws -> [String] {
        try await container.rawStrings("SELECT id || ' ' || email || ' ' || name || ' ' || visits FROM member ORDER BY id")
    }

    // MARK: Planner

    @Test func anObjectTrumpUpsertRepointsWhatTheSaveWroteWithTheAllocatedKey() throws {
        let member = try #require(uniquenessModel.entitiesByName["Member"])
        var values = [AttributeValue](repeating: .null, count: member.properties.count)
        values[member.propertyIndex(named: "email")!] = .string("a@example.com")
        values[member.propertyIndex(named: "name")!] = .string("A")
        values[member.propertyIndex(named: "visits")!] = .integer(1)
        let plan = try SavePlan(inserts: [.init(entity: member, key: 41, values: values)], updates: [], deletes: [],
                                joinInserts: [], joinDeletes: [], uniqueness: .objectTrump)
        let statement = try #require(plan.statements.first)
        guard case .upserts(let entity) = statement.check else { Issue.record("not an upsert"); return }
        #expect(entity === member)
        #expect(statement.sql.hasPrefix(#"WITH u AS (SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[]) AS u(k, c0, c1, c2)), w AS (INSERT INTO "member" AS t ("id", "email", "name", "visits") SELECT * FROM u ON CONFLICT ("email") DO UPDATE SET "name" = excluded."name", "visits" = excluded."visits" RETURNING t."id", t.xmin, t."email", t."name", t."visits")"#))
        // The visits' foreign key is repointed in the same statement.
        #expect(statement.sql.contains(#"UPDATE "visit" AS r SET "member_id" = m."id" FROM m WHERE r."member_id" = m.proposed"#))
        #expect(statement.sql.hasSuffix(#"SELECT * FROM m WHERE m."id" <> m.proposed"#))
        #expect(statement.bindings.count == 4)
        // A badge link of the new member is written after the upsert, with the key of the
        // row now holding the member's email.
        let badge = try #require(uniquenessModel.entitiesByName["Badge"])
        guard case .joinTable(let table) = member.storage(of: try #require(member.propertyIndex(named: "badges"))) else {
            Issue.record("badges has no join table")
            return
        }
        let linked = try SavePlan(
            inserts: [.init(entity: member, key: 41, values: values)], updates: [], deletes: [],
            joinInserts: [.init(table: table, source: 41, destination: 5,
                                sourceEntity: member, destinationEntity: badge)],
            joinDeletes: [], uniqueness: .objectTrump)
        #expect(linked.statements.count == 2)
        #expect(linked.statements.last?.sql == #"INSERT INTO "badge_members" ("badge_id", "member_id") SELECT coalesce(e0."id", x.k0), coalesce(e1."id", x.k1) FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[]) AS x(k0, k1, v0_0, v0_1, v1_0) LEFT JOIN "badge" AS e0 ON e0."kind" = x.v0_0 AND e0."level" = x.v0_1 LEFT JOIN "member" AS e1 ON e1."email" = x.v1_0 ON CONFLICT DO NOTHING"#)
        // Under `error`, the same insert is a plain one.
        let plain = try SavePlan(inserts: [.init(entity: member, key: 41, values: values)], updates: [], deletes: [],
                                 joinInserts: [], joinDeletes: [])
        #expect(plain.statements.first?.sql.hasPrefix(#"INSERT INTO "member" ("id", "email", "name", "visits") VALUES"#) == true)
    }

    @Test func aStoreTrumpUpsertInsertsNothingOverARowAndChecksItSawEveryConflict() throws {
        let badge = try #require(uniquenessModel.entitiesByName["Badge"])
        let key = try #require(badge.uniqueKeys.first)
        #expect(key.name == "badge_kind_level_key")
        var values = [AttributeValue](repeating: .null, count: badge.properties.count)
        values[badge.propertyIndex(named: "kind")!] = .string("gold")
        values[badge.propertyIndex(named: "level")!] = .integer(2)
        values[badge.propertyIndex(named: "title")!] = .string("Gold")
        let plan = try SavePlan(inserts: [.init(entity: badge, key: 7, values: values), .init(entity: badge, key: 8, values: values)],
                                updates: [], deletes: [], joinInserts: [], joinDeletes: [], uniqueness: .storeTrump)
        let sql = try #require(plan.statements.first?.sql)
        #expect(sql.contains(#"ON CONFLICT ("kind", "level") DO NOTHING RETURNING t."id""#))
        #expect(sql.contains(#"JOIN "badge" AS e ON e."kind" = u.c0 AND e."level" = u.c1"#))
        #expect(sql.contains("WHEN c.n + d.n = 2 THEN m.proposed IS NOT NULL ELSE ('\(SavePlan.uniquenessCheckMarker): '"))
    }

    @Test func theLookupAfterARefusedSaveSelectsRowsWithTheCandidatesPosition() throws {
        let badge = try #require(uniquenessModel.entitiesByName["Badge"])
        let lookup = try UniqueRowLookup(badge, key: try #require(badge.uniqueKeys.first),
                                         candidates: [[.string("gold"), .integer(1)], [.string("silver"), .integer(2)]])
        #expect(lookup.sql == #"SELECT t."id", t.xmin, t."kind", t."level", t."title", u.i FROM unnest($1::int4[], $2::text[], $3::bigint[]) AS u(i, c0, c1) JOIN "badge" AS t ON t."kind" = u.c0 AND t."level" = u.c1"#)
        #expect(lookup.bindings.count == 3)
    }

    // MARK: Against the server

    @Test func underTheErrorPolicyTheSaveThrowsBothSidesAndKeepsItsChanges() async throws {
        let container = try await container()
        let existing = try await saveMember("ada@example.com", name: "Ada", visits: 3, in: container)
        let context = container.newBackgroundContext()
        try await context.perform {
            let member = Member(context: context)
            member.email = "ada@example.com"
            member.name = "Ada L."
            let other = Member(context: context)
            other.email = "bob@example.com"
            do {
                try context.save()
                Issue.record("the save should have failed")
            } catch let error as PostgresDataError {
                guard case .constraintConflict(let conflicts) = error else { Issue.record("\(error)"); return }
                #expect(error.sqlState == "23505")
                #expect(conflicts.count == 1)
                let conflict = conflicts[0]
                #expect(conflict.constraint == ["email"] && conflict.constraintName == "member_email_key")
                #expect(conflict.constraintValues["email"] == .string("ada@example.com"))
                #expect(conflict.conflictingObjectIDs == [member.objectID])
                #expect(conflict.databaseObjectID == existing)
                #expect(conflict.databaseValues?["name"] == .string("Ada"))
                #expect(conflict.databaseValues?["visits"] == .integer(3))
                #expect("\(error)".contains("must be unique (constraint member_email_key): the row \(existing) holds it"))
            }
            // Nothing written; the context still holds both objects, to fix and retry.
            #expect(context.insertedObjects.count == 2)
            member.email = "ada.l@example.com"
            try context.save()
        }
        #expect(try await rows(container).count == 3)
    }

    @Test func objectTrumpWritesTheObjectOverTheRowWhichKeepsItsIDAndItsRelationships() async throws {
        let container = try await container(history: true)
        let existing = try await saveMember("ada@example.com", name: "Ada", visits: 3, in: container)
        let oldVisit = try await container.performBackgroundTask { context in
            let member = try #require(try context.existingObject(with: existing) as? Member)
            let visit = Visit(context: context)
            visit.page = "/old"
            visit.member = member
            try context.save()
            return visit.objectID
        }
        let context = container.newBackgroundContext()
        context.mergePolicy = .mergeByPropertyObjectTrump
        let (memberID, visitID, fresh) = try await context.perform {
            let member = Member(context: context)
            member.email = "ada@example.com"
            member.name = "Ada Lovelace"
            member.visits = 10
            let visit = Visit(context: context)
            visit.page = "/new"
            visit.member = member
            let badge = Badge(context: context)
            badge.kind = "gold"
            badge.level = 1
            member.badges = [badge]
            let fresh = Member(context: context)
            fresh.email = "bob@example.com"
            fresh.name = "Bob"
            try context.save()
            #expect(!member.objectID.isTemporaryID && !member.isInserted && !member.hasChanges)
            return (member.objectID, visit.objectID, fresh.objectID)
        }
        // The new object took the row's ID; the row took its values, in the save's transaction.
        #expect(memberID == existing)
        #expect(fresh != existing && !fresh.isTemporaryID)
        #expect(try await rows(container) == ["\(existing.primaryKey!) ada@example.com Ada Lovelace 10", "\(fresh.primaryKey!) bob@example.com Bob 0"])
        // What the save wrote pointing at the object points at the row: the new visit, the badge link.
        let key = existing.primaryKey!
        #expect(try await container.rawIntegers("SELECT member_id FROM visit ORDER BY id") == [key, key])
        #expect(try await container.rawIntegers("SELECT member_id FROM badge_members") == [key])
        // Another context reads the row with every relationship.
        try await container.performBackgroundTask { reader in
            let member = try #require(try reader.existingObject(with: existing) as? Member)
            #expect(member.name == "Ada Lovelace" && member.visits == 10)
            #expect(Set(member.visitLog.map(\.objectID)) == [oldVisit, visitID])
            #expect(member.badges.map(\.kind) == ["gold"])
        }
        // History says the row was updated, not inserted, and the other one inserted.
        let history = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil))
        let last = try #require(history.transactions.last)
        #expect(last.changes.filter { $0.changeType == .update }.map(\.changedObjectID) == [existing])
        #expect(Set(last.changes.filter { $0.changeType == .insert }.map(\.changedObjectID)).isSuperset(of: [fresh, visitID]))
        #expect(!last.changes.contains { $0.changeType == .insert && $0.changedObjectID == existing })
    }

    @Test func storeTrumpGivesTheObjectTheRowsValuesAndLeavesTheRowAlone() async throws {
        let container = try await container(history: true)
        let existing = try await saveMember("ada@example.com", name: "Ada", visits: 3, in: container)
        let version = try await container.rawIntegers("SELECT xmin::text::bigint FROM member")
        let context = container.newBackgroundContext()
        context.mergePolicy = .mergeByPropertyStoreTrump
        let saves = Locked<[ContextDidSave]>([])
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveObjectsNotification, object: context, queue: nil) { note in
            if let payload = note.userInfo?["changes"] as? ContextDidSave { saves.withLock { $0.append(payload) } }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try await context.perform {
            let member = Member(context: context)
            member.email = "ada@example.com"
            member.name = "Someone else"
            member.visits = 99
            let visit = Visit(context: context)
            visit.page = "/x"
            visit.member = member
            try context.save()
            // The object that resolved to the row is announced as updated, the visit as inserted.
            let announced = try #require(saves.withLock { $0.first })
            #expect(announced.insertedObjectIDs == [visit.objectID] && announced.updatedObjectIDs == [existing])
            #expect(member.objectID == existing)
            #expect(member.name == "Ada" && member.visits == 3 && !member.hasChanges)
            // The object is the row's now: a change is an ordinary version-checked update.
            member.visits += 1
            try context.save()
        }
        #expect(try await rows(container) == ["\(existing.primaryKey!) ada@example.com Ada 4"])
        #expect(try await container.rawIntegers("SELECT member_id FROM visit") == [existing.primaryKey!])
        #expect(try await container.rawIntegers("SELECT xmin::text::bigint FROM member") != version)
        let history = try await context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil))
        // The resolving save recorded the visit's insert and no insert of the member.
        let resolving = history.transactions[1]
        #expect(resolving.changes.map(\.changeType) == [.insert])
        #expect(resolving.changes.first?.changedObjectID.entity.name == "Visit")
    }

    @Test func storeTrumpLeavesTheRowsVersionSoOtherContextsSaveWithoutConflict() async throws {
        let container = try await container()
        let existing = try await saveMember("ada@example.com", name: "Ada", visits: 3, in: container)
        let holder = container.newBackgroundContext()
        try await holder.perform {
            let member = try #require(try holder.existingObject(with: existing) as? Member)
            #expect(member.visits == 3)
        }
        let context = container.newBackgroundContext()
        context.mergePolicy = .rollback
        try await context.perform {
            let member = Member(context: context)
            member.email = "ada@example.com"
            try context.save()
            #expect(member.objectID == existing)
        }
        // The holder's update passes its version check: the upsert wrote nothing to the row.
        try await holder.perform {
            let member = try #require(try holder.existingObject(with: existing) as? Member)
            member.visits = 4
            try holder.save()
        }
        #expect(try await rows(container) == ["\(existing.primaryKey!) ada@example.com Ada 4"])
    }

    @Test func anObjectTheContextHeldForTheRowLeavesTheContext() async throws {
        let container = try await container()
        let existing = try await saveMember("ada@example.com", name: "Ada", visits: 3, in: container)
        let context = container.newBackgroundContext()
        context.mergePolicy = .overwrite
        try await context.perform {
            let held = try #require(try context.existingObject(with: existing) as? Member)
            let member = Member(context: context)
            member.email = "ada@example.com"
            member.name = "New Ada"
            try context.save()
            #expect(held.managedObjectContext == nil)
            // The object let go is not saved anywhere: relating it changes nothing and stops nothing.
            held.visitLog = [Visit(context: context)]
            #expect(held.visitLog.isEmpty)
            #expect(context.registeredObject(for: existing) === member)
            let fetched = try context.fetch(FetchRequest<Member>(entityName: "Member"))
            #expect(fetched.count == 1 && fetched[0] === member)
        }
    }

    @Test func objectsOfOneSaveThatShareAKeyThrowUnderEveryPolicy() async throws {
        let container = try await container()
        for policy in [MergePolicy.error, .mergeByPropertyObjectTrump, .mergeByPropertyStoreTrump] {
            let context = container.newBackgroundContext()
            context.mergePolicy = policy
            await context.perform {
                let first = Badge(context: context)
                first.kind = "gold"
                first.level = 1
                let second = Badge(context: context)
                second.kind = "gold"
                second.level = 1
                let third = Badge(context: context)
                third.kind = "gold"  // Another level: no conflict.
                third.level = 2
                #expect { try context.save() } throws: { error in
                    guard case PostgresDataError.constraintConflict(let conflicts) = error, conflicts.count == 1 else { return false }
                    return conflicts[0].databaseObjectID == nil && Set(conflicts[0].conflictingObjectIDs) == [first.objectID, second.objectID]
                        && conflicts[0].constraint == ["kind", "level"] && (error as? PostgresDataError)?.sqlState == nil
                }
            }
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM badge") == [0])
    }

    @Test func aSaveTooLargeForOnePipelineResolvesEveryConflictToo() async throws {
        let container = try await container()
        try await container.performBackgroundTask { context in
            for level in 0..<300 {
                let badge = Badge(context: context)
                badge.kind = "bulk"
                badge.level = level
                badge.title = "old"
            }
            try context.save()
        }
        let context = container.newBackgroundContext()
        context.mergePolicy = .mergeByPropertyObjectTrump
        let keys = try await context.perform {
            // 600 objects: more than one pipelined save holds; half of them exist.
            let badges = (150..<750).map { level in
                let badge = Badge(context: context)
                badge.kind = "bulk"
                badge.level = level
                badge.title = "new"
                return badge
            }
            try context.save()
            return badges.map { $0.objectID.primaryKey ?? 0 }
        }
        #expect(try await container.rawIntegers("SELECT count(*) FROM badge") == [750])
        #expect(try await container.rawIntegers("SELECT count(*) FROM badge WHERE title = 'new'") == [600])
        #expect(Set(keys).count == 600)
        #expect(try await container.rawIntegers("SELECT id FROM badge WHERE level BETWEEN 150 AND 749 ORDER BY level") == keys)
    }

    @Test func manyConcurrentUpsertsOfOneKeyLeaveOneRowAndEveryObjectWithItsID() async throws {
        let container = try await container()
        let ids = try await withThrowingTaskGroup(of: ManagedObjectID.self) { group in
            for index in 0..<24 {
                group.addTask {
                    let context = container.newBackgroundContext()
                    context.mergePolicy = index.isMultiple(of: 2) ? .mergeByPropertyObjectTrump : .mergeByPropertyStoreTrump
                    return try await context.perform {
                        let badge = Badge(context: context)
                        badge.kind = "shared"
                        badge.level = 1
                        badge.title = "writer \(index)"
                        try context.save()
                        return badge.objectID
                    }
                }
            }
            return try await group.reduce(into: Set<ManagedObjectID>()) { $0.insert($1) }
        }
        #expect(ids.count == 1)
        #expect(try await container.rawIntegers("SELECT count(*) FROM badge") == [1])
        #expect(try await container.rawIntegers("SELECT id FROM badge") == [try #require(ids.first?.primaryKey)])
    }
}
