import CoreMetrics
import Foundation
import InMemoryTracing
import MetricsTestKit
import PostgresClient
import PostgresData
import PostgresDataTesting
import PostgresMigrations
import Testing
import Tracing

@Entity final class Ledger: ManagedObject {
    @Attribute(.unique) var code: String
    var balance = 0
}

/// Spans (through a bootstrapped in-memory tracer) and metrics (through MetricsTestKit) of
/// real operations on a real server.
@Suite struct StoreTelemetryTests {
    let tracer = TraceRecorder.shared

    /// A loaded container whose store publishes to `metrics`, with three ledgers.
    func container(_ metrics: TestMetrics, options: PersistentStoreCoordinator.StoreOptions = .init(createSchemaIfMissing: true),
                   configuration given: Configuration? = nil) async throws -> (PersistentContainer, Configuration) {
        var configuration = given
        if configuration == nil { configuration = try await TestDatabase.fresh(prefix: "pd_telemetry") }
        guard let configuration else { throw PostgresDataError.storeNotLoaded }
        let container = PersistentContainer(name: "Ledgers", model: ManagedObjectModel(Ledger.self))
        try await withMetricsFactory(metrics) {
            try await container.loadPersistentStores(configuration: configuration, options: options)
        }
        if given == nil {
            let context = container.newBackgroundContext()
            try await context.perform {
                for code in ["A", "B", "C"] { Ledger(context: context).code = code }
                try await context.save()
            }
        }
        return (container, configuration)
    }

    func dimensions(_ configuration: Configuration, _ extra: (String, String)...) -> [(String, String)] {
        [("db.system.name", "postgresql"), ("db.namespace", configuration.database ?? "")] + extra
    }

    @Test func aRequestsFetchAndSaveAreChildSpansWithTheDatabaseAttributesAndTheirMetrics() async throws {
        let metrics = TestMetrics()
        let (container, configuration) = try await container(metrics)
        defer { Task { await container.persistentStoreCoordinator.close() } }
        let context = container.newBackgroundContext()
        let spans = try await tracer.trace("request") {
            try await context.perform {
                let request = FetchRequest<Ledger>(predicate: try FetchPredicate(format: "code == %@", "secret-code-B"))
                #expect(try await context.fetch(request).isEmpty)
                let ledger = try #require(try await context.fetch(FetchRequest<Ledger>(predicate: try FetchPredicate(format: "code == %@", "B"))).first)
                ledger.balance += 10
                try await context.save()
            }
        }
        #expect(spans.map(\.operationName) == ["fetch Ledger", "fetch Ledger", "save"])
        let root = try #require(spans.first?.parentSpanID)
        #expect(spans.allSatisfy { $0.parentSpanID == root && $0.kind == .client }, "each operation is a child of the request's span")
        let fetch = spans[1]
        #expect(fetch.text("db.system") == "postgresql")
        #expect(fetch.text("db.namespace") == configuration.database)
        #expect(fetch.text("db.operation.name") == "fetch")
        #expect(fetch.text("db.collection.name") == Ledger.entity().tableName)
        #expect(fetch.text("db.response.returned_rows") == "1")
        let text = try #require(fetch.text("db.query.text"))
        #expect(text.contains("SELECT") && text.contains("$1"))
        #expect(spans[0].text("db.query.text")?.contains("secret-code-B") == false, "values travel as bind parameters, never in the text")
        #expect(spans[0].text("db.response.returned_rows") == "0")
        let save = spans[2]
        #expect(save.text("db.operation.name") == "save")
        #expect(save.text("db.query.text")?.contains("UPDATE") == true)
        #expect(save.text("postgresdata.rows.updated") == "1")
        #expect(save.status == nil)

        let table = Ledger.entity().tableName
        let fetchTimer = try metrics.expectTimer("db.client.operation.duration",
                                                 dimensions(configuration, ("db.operation.name", "fetch"), ("db.collection.name", table)))
        #expect(fetchTimer.values.count == 2)
        // The three inserts of the set-up, then this update.
        #expect(try metrics.expectTimer("db.client.operation.duration", dimensions(configuration, ("db.operation.name", "save"))).values.count == 2)
        let rows = try metrics.expectRecorder("db.client.response.returned_rows",
                                              dimensions(configuration, ("db.operation.name", "fetch"), ("db.collection.name", table)))
        #expect(rows.values == [0, 1])
        #expect(try metrics.expectCounter("postgresdata.rows.written", dimensions(configuration, ("db.operation.name", "insert"), ("db.collection.name", table))).totalValue == 3)
        #expect(try metrics.expectCounter("postgresdata.rows.written", dimensions(configuration, ("db.operation.name", "update"), ("db.collection.name", table))).totalValue == 1)
        // The pool publishes to the same factory.
        #expect(try metrics.expectMeter("db.client.connection.max", [("db.client.connection.pool.name", "\(configuration.host ?? "localhost"):\(configuration.port ?? 5432)/\(configuration.database ?? "")")]).lastValue == 8)
    }

    @Test func countsBatchRequestsAndAsynchronousFetchesHaveSpansWithTheirRowCounts() async throws {
        let metrics = TestMetrics()
        let (container, configuration) = try await container(metrics)
        defer { Task { await container.persistentStoreCoordinator.close() } }
        let context = container.newBackgroundContext()
        let spans = try await tracer.trace("batches") {
            try await context.perform {
                #expect(try await context.count(for: FetchRequest<Ledger>()) == 3)
                var update = BatchUpdateRequest(entity: Ledger.self, predicate: try FetchPredicate(format: "code != %@", "C"))
                update.propertiesToUpdate = ["balance": 5]
                #expect(try await context.execute(update).count == 2)
                _ = try await context.execute(try BatchInsertRequest(entityName: "Ledger", objects: [["code": "D"], ["code": "E"]]))
                let delete = BatchDeleteRequest(fetchRequest: FetchRequest<Ledger>(predicate: try FetchPredicate(format: "code == %@", "A")))
                #expect(try await context.execute(delete).count == 1)
            }
            let asynchronous = try await context.perform { try context.execute(AsynchronousFetchRequest(fetchRequest: FetchRequest<Ledger>())) }
            try await asynchronous.wait()
        }
        let names = spans.map(\.operationName)
        #expect(Set(names) == ["count Ledger", "batch_update Ledger", "batch_insert Ledger", "batch_delete Ledger", "asynchronous_fetch Ledger"], "\(names)")
        func span(_ name: String) throws -> FinishedInMemorySpan { try #require(spans.first { $0.operationName == name }) }
        #expect(try span("count Ledger").text("db.query.text")?.contains("count(*)") == true)
        #expect(try span("batch_update Ledger").text("db.response.affected_rows") == "2")
        #expect(try span("batch_update Ledger").text("db.query.text")?.contains("UPDATE ") == true)
        #expect(try span("batch_insert Ledger").text("db.response.affected_rows") == "2")
        #expect(try span("batch_delete Ledger").text("db.response.affected_rows") == "1")
        #expect(try span("asynchronous_fetch Ledger").text("db.response.returned_rows") == "4")
        let table = Ledger.entity().tableName
        #expect(try metrics.expectCounter("postgresdata.rows.written", dimensions(configuration, ("db.operation.name", "delete"), ("db.collection.name", table))).totalValue == 1)
        #expect(try metrics.expectCounter("postgresdata.rows.written", dimensions(configuration, ("db.operation.name", "insert"), ("db.collection.name", table))).totalValue == 5)
        #expect(try metrics.expectTimer("db.client.operation.duration",
                                        dimensions(configuration, ("db.operation.name", "asynchronous_fetch"), ("db.collection.name", table))).values.count == 1)
    }

    @Test func aFailedSaveSpanCarriesTheSQLStateAndItsDurationIsCountedAsFailed() async throws {
        let metrics = TestMetrics()
        let (container, configuration) = try await container(metrics)
        defer { Task { await container.persistentStoreCoordinator.close() } }
        let context = container.newBackgroundContext()
        let spans = try await tracer.trace("duplicate") {
            await #expect(throws: PostgresDataError.self) {
                try await context.perform {
                    Ledger(context: context).code = "A"
                    try await context.save()
                }
            }
        }
        let save = try #require(spans.first { $0.operationName == "save" })
        #expect(save.text("error.type") == "23505")
        #expect(save.text("db.response.status_code") == "23505")
        #expect(save.status?.code == .error)
        #expect(!save.errors.isEmpty)
        #expect(try metrics.expectTimer("db.client.operation.duration",
                                        dimensions(configuration, ("db.operation.name", "save"), ("error.type", "23505"))).values.count == 1)
    }

    @Test func conflictsAndRetriesAreCounted() async throws {
        let metrics = TestMetrics()
        let (container, configuration) = try await container(metrics)
        defer { Task { await container.persistentStoreCoordinator.close() } }
        let first = container.newBackgroundContext()
        first.mergePolicy = .error
        let ledgerID = try await first.perform {
            let ledger = try #require(try await first.fetch(FetchRequest<Ledger>(predicate: try FetchPredicate(format: "code == %@", "A"))).first)
            ledger.balance = 1
            return ledger.objectID
        }
        // Another writer changes the row first.
        let other = container.newBackgroundContext()
        try await other.perform {
            let ledger = try #require(try await other.existingObject(with: ledgerID) as? Ledger)
            ledger.balance = 2
            try await other.save()
        }
        await #expect(throws: PostgresDataError.self) { try await first.perform { try await first.save() } }
        let table = Ledger.entity().tableName
        #expect(try metrics.expectCounter("postgresdata.save.conflicts", dimensions(configuration, ("db.collection.name", table))).totalValue == 1)

        // A unit of work that meets a conflict once, then succeeds on its second attempt.
        let retried = container.newBackgroundContext()
        retried.mergePolicy = .error
        let attempts = Locked(0)
        try await retried.perform(retryingUpTo: 3) {
            let ledger = try retried.existingObject(with: ledgerID) as! Ledger
            ledger.balance += 1
            if attempts.withLock({ $0 += 1; return $0 }) == 1 {
                try other.performAndWait {
                    (try other.existingObject(with: ledgerID) as! Ledger).balance += 100
                    try other.save()
                }
            }
            try retried.save()
        }
        #expect(attempts.withLock { $0 } == 2)
        #expect(try metrics.expectCounter("postgresdata.perform.retries", dimensions(configuration, ("error.type", "merge_conflict"))).totalValue == 1)
        #expect(try metrics.expectCounter("postgresdata.save.conflicts", dimensions(configuration, ("db.collection.name", table))).totalValue == 2)
    }

    @Test func remoteChangesReportHowLongAfterTheirCommitTheyWereMerged() async throws {
        let metrics = TestMetrics()
        let tracking = PersistentStoreCoordinator.StoreOptions(createSchemaIfMissing: true, persistentHistoryTracking: true)
        let (listening, configuration) = try await container(metrics, options: tracking)
        defer { Task { await listening.persistentStoreCoordinator.close() } }
        let changes = listening.persistentStoreCoordinator.remoteChanges()
        let (writer, _) = try await container(TestMetrics(), options: tracking, configuration: configuration)
        defer { Task { await writer.persistentStoreCoordinator.close() } }
        let context = writer.newBackgroundContext()
        try await context.perform {
            Ledger(context: context).code = "remote"
            try await context.save()
        }
        // 60 s, as the suite's other waits: a loaded machine's cooperative threads, which
        // other tests block on purpose, can hold this task back for many seconds.
        try await Deadline.within(.seconds(60), "the remote change") {
            for await change in changes where !change.transactions.isEmpty { break }
        }
        let lag = try metrics.expectTimer("postgresdata.remote_change.lag", dimensions(configuration))
        #expect(lag.values.count >= 1)
        #expect(lag.values.allSatisfy { $0 >= 0 && $0 < 60_000_000_000 }, "\(lag.values)")
    }

    @Test func aMigrationRunIsASpanWithAChildPerMigration() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_telemetry_migrations")
        let directory = try MigrationDirectory(migrations: [
            try Migration(fileName: "0001_create_notes.sql", contents: "-- migrate:up\nCREATE TABLE notes (id bigint PRIMARY KEY);\n"),
            try Migration(fileName: "0002_index_notes.sql", contents: "-- migrate:no-transaction\n-- migrate:up\nCREATE INDEX CONCURRENTLY notes_id ON notes (id);\n"),
        ])
        let spans = try await tracer.trace("deploy") {
            try await Migrator(configuration: configuration, directory: directory).up()
        }
        #expect(spans.map(\.operationName) == ["migration 0001", "migration 0002", "migrate up"])
        let run = try #require(spans.last)
        #expect(spans.dropLast().allSatisfy { $0.parentSpanID == run.spanID })
        #expect(run.text("db.namespace") == configuration.database)
        #expect(spans[0].text("postgresdata.migration.name") == "create_notes")
        #expect(spans[1].text("postgresdata.migration.transactional") == "false")
    }
}
