import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import StressWorkload
import Testing

/// A database of its own with the stress model's graph, a container on it, and an
/// administrative connection to cause faults from outside: stop a statement half-way with a
/// gate, then kill, cancel or time it out, and look at what the database holds.
struct FaultStage {
    let configuration: Configuration
    let container: PersistentContainer
    let admin: Connection

    /// `adjust` changes the container's connection settings only: the administrative
    /// connections keep the server's defaults, so a short timeout set for the store never
    /// cuts the test's own statements on a busy machine.
    static func make(_ options: PersistentStoreCoordinator.StoreOptions = .init(), adjust: (inout Configuration) -> Void = { _ in }) async throws -> FaultStage {
        let configuration = try await StressModel.seededDatabase(prefix: "pd_faults")
        var storeConfiguration = configuration
        adjust(&storeConfiguration)
        let container = PersistentContainer(name: "Faults", model: StressModel.model)
        try await container.loadPersistentStores(configuration: storeConfiguration, options: options)
        return FaultStage(configuration: configuration, container: container, admin: try await Connection.connect(configuration))
    }

    /// The advisory lock key the gates wait on.
    static let gateKey = 9001

    /// A trigger that stops rows at a lock, and the connection holding that lock.
    struct Gate {
        var holder: Connection
        var table: String
    }

    /// Makes every row written to `table` that matches `condition` (SQL over NEW) wait for
    /// the gate's lock, which the gate's connection holds until ``open(_:)``.
    func closeGate(on table: String, when condition: String, for event: String = "INSERT") async throws -> Gate {
        try await admin.execute(script: """
            CREATE FUNCTION gate() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM pg_advisory_xact_lock_shared(\(Self.gateKey)); RETURN NEW; END $$;
            CREATE TRIGGER gate BEFORE \(event) ON \(table) FOR EACH ROW WHEN (\(condition)) EXECUTE FUNCTION gate();
            """)
        let holder = try await Connection.connect(configuration)
        try await holder.query("SELECT pg_advisory_lock($1)", Int64(Self.gateKey))
        return Gate(holder: holder, table: table)
    }

    /// The backend waiting at the gate, once a statement reaches it.
    func backendAtTheGate() async throws -> Int32 {
        var pid: Int32?
        try await Deadline.poll("a statement waiting at the gate") {
            pid = try await admin.query("""
                SELECT pid FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'
                """).first?.decode(Int32.self, at: 0)
            return pid != nil
        }
        return pid!
    }

    /// Waits until a statement of this database waits for a row another transaction holds.
    func untilAStatementWaitsForARowLock() async throws {
        try await Deadline.poll("a statement waiting for another transaction's row") {
            try await integer("""
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'transactionid'
                """) > 0
        }
    }

    /// Lets waiting statements through and removes the gate.
    func open(_ gate: Gate) async throws {
        try await gate.holder.query("SELECT pg_advisory_unlock($1)", Int64(Self.gateKey))
        await gate.holder.close()
        try await admin.execute(script: "DROP TRIGGER gate ON \(gate.table); DROP FUNCTION gate()")
    }

    func integer(_ sql: String) async throws -> Int64 {
        try await admin.query(sql)[0].decode(Int64.self, at: 0)
    }

    /// Sessions of this database left inside a transaction (none may be, after any fault).
    func sessionsInsideATransaction() async throws -> Int64 {
        try await integer("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'")
    }

    /// A fresh context whose objects are new cards on `board`, not yet saved.
    func contextWithNewCards(_ count: Int, prefix: String = "card", board: String = "board 1") async throws -> ManagedObjectContext {
        let context = container.newBackgroundContext()
        try await context.perform {
            let request = FetchRequest<Board>(predicate: try FetchPredicate(format: "name == %@", board))
            let board = try context.fetch(request).first
            for number in 1...count {
                let card = Card(context: context)
                card.token = "\(prefix) \(number)"
                card.title = "title \(number)"
                card.board = board
            }
        }
        return context
    }

    func close() async {
        await admin.close()
        await container.persistentStoreCoordinator.close()
    }
}

/// A new temporary folder holding `files` (name → contents); removed by `body`'s end.
func withTemporaryFolder<T>(_ files: [String: String], _ body: (String) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pd-reliability-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    for (name, contents) in files { try contents.write(toFile: folder + "/" + name, atomically: true, encoding: .utf8) }
    return try await body(folder)
}

/// The SQLSTATE of a PostgresData error, or nil.
func sqlState(of error: (any Error)?) -> String? {
    (error as? PostgresDataError)?.sqlState
}
