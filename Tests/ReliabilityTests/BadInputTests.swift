import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import PostgresMigrations
import StressWorkload
import Testing

/// Every public entry point fed wrong input: each case must throw an error that says what
/// was wrong, leave the database as it was, and never crash.
@Suite("Bad input: a clear error, the database unchanged")
struct BadInputTests {
    /// One wrong input: what it is, what the error must say, and the call.
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        /// Fragments the error's description must contain.
        var says: [String]
        /// Runs the input with a context and an administrative connection.
        var run: @Sendable (ManagedObjectContext, Connection) async throws -> Void

        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a URL with an invalid port (the password is never shown)", says: ["invalid port"]) { _, _ in
            try await PersistentContainer(name: "Bad", model: StressModel.model)
                .loadPersistentStores(url: "postgres://user:s3cret-pw@localhost:99999/db")
        },
        Case(name: "a URL of another scheme", says: ["unsupported scheme"]) { _, _ in
            try await PersistentContainer(name: "Bad", model: StressModel.model).loadPersistentStores(url: "mysql://user:s3cret-pw@localhost/db")
        },
        Case(name: "a URL naming a server that refuses the connection", says: ["127.0.0.1"]) { _, _ in
            try await PersistentContainer(name: "Bad", model: StressModel.model)
                .loadPersistentStores(url: "postgres://user:s3cret-pw@127.0.0.1:1/db?connect_timeout=5")
        },
        Case(name: "unknown entity", says: ["Nothing", "entity"]) { context, _ in
            try await context.perform { _ = try context.fetch(FetchRequest<[String: AttributeValue]>(entityName: "Nothing")) }
        },
        Case(name: "unknown key in a predicate, closest key named", says: ["titel", "title"]) { context, _ in
            try await context.perform { _ = try context.fetch(FetchRequest<Card>(predicate: try FetchPredicate(format: "titel == 'x'"))) }
        },
        Case(name: "a key with a Cyrillic і (confusable)", says: ["t\u{456}tle", "title"]) { context, _ in
            try await context.perform { _ = try context.fetch(FetchRequest<Card>(predicate: try FetchPredicate(format: "t\u{456}tle == 'x'"))) }
        },
        Case(name: "%K with a crafted key", says: ["title\"; DROP TABLE stress_card; --"]) { context, _ in
            try await context.perform {
                _ = try context.fetch(FetchRequest<Card>(predicate: try FetchPredicate(format: "%K == 'x'", "title\"; DROP TABLE stress_card; --")))
            }
        },
        Case(name: "wrong value type in a predicate", says: ["revision"]) { context, _ in
            try await context.perform { _ = try context.fetch(FetchRequest<Card>(predicate: try FetchPredicate(format: "revision == %@", "many"))) }
        },
        Case(name: "malformed predicate", says: ["column"]) { _, _ in
            _ = try FetchPredicate(format: "title == 'x' AND (")
        },
        Case(name: "parentheses nested 100,000 deep", says: ["nested"]) { _, _ in
            _ = try FetchPredicate(format: String(repeating: "(", count: 100_000) + "title == 'x'" + String(repeating: ")", count: 100_000))
        },
        Case(name: "NOT repeated 100,000 times", says: ["nested"]) { _, _ in
            _ = try FetchPredicate(format: String(repeating: "NOT ", count: 100_000) + "title == 'x'")
        },
        Case(name: "lists nested 30,000 deep", says: ["nested"]) { _, _ in
            _ = try FetchPredicate(format: "title IN " + String(repeating: "{", count: 30_000) + "'x'" + String(repeating: "}", count: 30_000))
        },
        Case(name: "SUBQUERY nested 10,000 deep", says: ["nested"]) { _, _ in
            _ = try FetchPredicate(format: String(repeating: "SUBQUERY(labels, $l, ", count: 10_000) + "TRUEPREDICATE"
                                   + String(repeating: ").@count > 0", count: 10_000))
        },
        Case(name: "value(forKey:) with an unknown key, thrown by the save", says: ["colour", "Card"]) { context, _ in
            try await context.perform {
                let card = Card(context: context)
                card.token = "unknown key"
                card.title = "unknown key"
                #expect(card.value(forKey: "colour") == nil)
                try context.save()
            }
        },
        Case(name: "an object of another class than its entity's", says: ["cannot be an object of entity Card"]) { context, _ in
            try await context.perform {
                _ = Label(entity: Card.entity(), insertInto: context)
                try context.save()
            }
        },
        Case(name: "setValue with an unknown key", says: ["colour", "Card"]) { context, _ in
            try await context.perform { try Card(context: context).setValue("red", forKey: "colour") }
        },
        Case(name: "setValue with a wrong type", says: ["revision", "String"]) { context, _ in
            try await context.perform { try Card(context: context).setValue("seven", forKey: "revision") }
        },
        Case(name: "a NUL byte inside a saved string", says: ["0x00"]) { context, _ in
            try await context.perform {
                let card = Card(context: context)
                card.token = "nul"
                card.title = "before\u{0}after"
                try context.save()
            }
        },
        Case(name: "a unique value taken (unique constraint)", says: ["23505", "name"]) { context, _ in
            try await context.perform {
                Label(context: context).name = "label 1"
                try context.save()
            }
        },
        Case(name: "a required value missing (not null)", says: ["title"]) { context, _ in
            try await context.perform {
                let card = Card(context: context)
                card.token = "untitled"
                try card.setValue(nil, forKey: "title")
                try context.save()
            }
        },
        Case(name: "a relationship to a row deleted meanwhile (foreign key)", says: ["23503"]) { context, admin in
            // The board stays registered: the save, not the lookup, meets the deleted row.
            context.retainsRegisteredObjects = true
            let boardID = try await context.perform {
                let board = Board(context: context)
                board.name = "short-lived"
                try context.save()
                return board.objectID
            }
            try await admin.query("DELETE FROM stress_board WHERE id = $1", boardID.primaryKey!)
            try await context.perform {
                let card = Card(context: context)
                card.token = "orphan"
                card.title = "orphan"
                card.board = try context.existingObject(with: boardID) as? Board
                try context.save()
            }
        },
        Case(name: "a batch insert with an unknown key", says: ["colour"]) { context, _ in
            _ = try await context.execute(try BatchInsertRequest(entityName: "Label", objects: [["name": "x", "colour": "red"]]))
        },
        Case(name: "a batch insert with a wrong type", says: ["name"]) { context, _ in
            _ = try await context.execute(try BatchInsertRequest(entityName: "Label", objects: [["name": 42]]))
        },
    ]

    @Test(arguments: cases)
    func throwsAClearErrorAndChangesNothing(_ input: Case) async throws {
        let stage = try await FaultStage.make()
        // The short-lived board of the foreign-key case is part of the case, not of the fingerprint.
        let before = try await fingerprint(stage)
        let context = stage.container.newBackgroundContext()
        var error: (any Error)?
        do {
            try await input.run(context, stage.admin)
        } catch let thrown {
            error = thrown
        }
        let text = error.map { "\($0)" } ?? ""
        #expect(error != nil, "\(input.name): no error")
        for fragment in input.says {
            #expect(text.contains(fragment), "\(input.name): the error does not say \(fragment): \(text)")
        }
        #expect(!text.contains("s3cret-pw"), "\(input.name): the error shows the password: \(text)")
        #expect(try await fingerprint(stage) == before, "\(input.name) changed the database")
        await stage.close()
    }

    @Test func windowsAndCountsFromARequestNeverStopTheProcess() async throws {
        let stage = try await FaultStage.make()
        let context = stage.container.newBackgroundContext()
        let counts = try await context.perform { () throws in
            // An unsaved object makes the window be cut in memory, where offset + limit overflowed.
            let card = Card(context: context)
            card.token = "window"
            card.title = "window"
            var request = FetchRequest<Card>()
            request.fetchOffset = Int.max
            request.fetchLimit = Int.max
            let beyond = try context.fetch(request).count
            request.fetchOffset = 0
            let all = try context.fetch(request).count
            return (beyond, all, try context.count(for: request))
        }
        #expect(counts.0 == 0)
        #expect(counts.1 == counts.2 && counts.1 >= 1)
        // A retry count below 1 runs the block once.
        var runs = 0
        try context.performAndWait(retryingUpTo: 0) { runs += 1 }
        #expect(runs == 1)
        await stage.close()
    }

    @Test func enormousStringsRoundTripAndInjectionAttemptsAreValues() async throws {
        try await MemoryIntensiveTests.sharingWithOthers { try await enormousStringsAndInjectionAttempts() }
    }

    private func enormousStringsAndInjectionAttempts() async throws {
        let stage = try await FaultStage.make()
        let context = stage.container.newBackgroundContext()
        let enormous = String(repeating: "ü€𝄞 ", count: 1_000_000)
        let attack = "'; DROP TABLE stress_card; --"
        let found = try await context.perform { () throws in
            let card = Card(context: context)
            card.token = attack
            card.title = enormous
            try context.save()
            let byToken = try context.fetch(FetchRequest<Card>(predicate: try FetchPredicate(format: "token == %@", attack)))
            let byLike = try context.fetch(FetchRequest<Card>(predicate: try FetchPredicate(format: "token LIKE %@", "*DROP TABLE*")))
            return byToken.count + byLike.count
        }
        #expect(found == 2)
        #expect(try await stage.integer("SELECT count(*) FROM stress_card WHERE length(title) = \(enormous.count)") == 1)
        await stage.close()
    }

    @Test func invalidUTF8DecodedAsAStringIsAnError() async throws {
        let stage = try await FaultStage.make()
        let rows = try await stage.admin.query("SELECT '\\xff41'::bytea")
        #expect(throws: PostgresError.self) { _ = try rows[0].decode(String.self, at: 0) }
        #expect(try rows[0].decode(Data.self, at: 0) == Data([0xFF, 0x41]))
        await stage.close()
    }

    @Test func aMigrationWithAnUnbalancedDollarQuoteIsRefusedBeforeAnythingRuns() async throws {
        try await withTemporaryFolder([
            "0001_a.sql": "-- migrate:up\nCREATE TABLE a (x int);\n",
            "0002_b.sql": "-- migrate:no-transaction\n-- migrate:up\nCREATE TABLE b (x int);\nDO $$ BEGIN PERFORM 1; END;\n",
        ]) { try await refuseUnbalancedDollarQuote(folder: $0) }
    }

    private func refuseUnbalancedDollarQuote(folder: String) async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_faults")
        let error = await #expect(throws: MigrationError.self) {
            _ = try await Migrator(configuration: configuration, directory: try MigrationDirectory(path: folder)).up()
        }
        #expect("\(error!)".contains("0002_b.sql") && "\(error!)".contains("$$"), "\(String(describing: error))")
        let connection = try await Connection.connect(configuration)
        // Neither file ran: 0001 is valid but waits for the whole plan to be readable.
        #expect(try await connection.query("SELECT count(*) FROM pg_tables WHERE tablename IN ('a', 'b')")[0].decode(Int64.self, at: 0) == 0)
        #expect(try await connection.query("SELECT count(*) FROM postgres_data_migrations")[0].decode(Int64.self, at: 0) == 0)
        await connection.close()
    }

    /// Row counts and a digest of every stress table: equal before and after a refused input.
    private func fingerprint(_ stage: FaultStage) async throws -> [String] {
        try await stage.admin.query("""
            SELECT 'tables ' || string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'
            UNION ALL SELECT 'cards ' || count(*) || ' ' || coalesce(md5(string_agg(token || title || revision, ',' ORDER BY id)), '') FROM stress_card
            UNION ALL SELECT 'boards ' || count(*) FILTER (WHERE name <> 'short-lived') FROM stress_board
            UNION ALL SELECT 'labels ' || string_agg(name, ',' ORDER BY id) FROM stress_label
            UNION ALL SELECT 'counters ' || string_agg(name || value, ',' ORDER BY id) FROM stress_counter
            UNION ALL SELECT 'joins ' || count(*) FROM stress_card_labels
            """).map { try $0.decode(String.self, at: 0) }
    }
}
