import CLibPQ
import Foundation
import PostgresClient

/// The PostgreSQL that tests, benchmarks and the demo use: the server `DATABASE_URL` names,
/// or else a ``TemporaryPostgres`` started once per process.
///
/// ```swift
/// let database = try await TestDatabase.fresh()        // a new, empty database
/// let connection = try await Connection.connect(database)
/// ```
///
/// Each ``fresh(prefix:)`` call creates its own database, so suites running in parallel
/// (or runs on a shared `DATABASE_URL` server) never see each other's data. Databases created
/// on a `DATABASE_URL` server are dropped when the process exits.
public enum TestDatabase {
    private static let state = SharedServer()

    /// The server's administrative configuration (superuser on the `postgres` database, or `DATABASE_URL` as given).
    public static func server() async throws -> Configuration {
        try await state.configuration()
    }

    /// The throwaway cluster, when one was started (nil when `DATABASE_URL` is used).
    public static func temporaryServer() async throws -> TemporaryPostgres? {
        _ = try await state.configuration()
        return await state.temporary
    }

    /// Creates a new, empty database and returns how to connect to it.
    public static func fresh(prefix: String = "pd_test") async throws -> Configuration {
        let server = try await server()
        let name = "\(prefix)_\(getpid())_\(SharedServer.nextNumber())"
        let admin = try await Connection.connect(server)
        defer { Task { await admin.close() } }
        let temporary = await state.temporary
        // In a throwaway cluster in memory, copying the template's files is four times as fast
        // as writing its pages through the WAL, PostgreSQL 15's default (0.1 s against 0.45 s):
        // a parallel suite creates hundreds. The checkpoints a file copy forces cost nothing
        // there; on a shared server they would, so it keeps its default.
        let copiesFiles = temporary?.isInMemory == true ? await admin.serverVersion >= 150_000 : false
        try await admin.execute(script: "CREATE DATABASE \(quoteIdentifier(name))" + (copiesFiles ? " STRATEGY FILE_COPY" : ""))
        if temporary == nil { DroppedAtExit.add(name, on: server) }
        var configuration = server
        configuration.database = name
        return configuration
    }
}

private actor SharedServer {
    private var cached: Configuration?
    private(set) var temporary: TemporaryPostgres?
    private static let counter = Locked(0)

    static func nextNumber() -> Int {
        counter.withLock {
            $0 += 1
            return $0
        }
    }

    func configuration() throws -> Configuration {
        if let cached { return cached }
        if let fromEnvironment = try Configuration.fromEnvironment() {
            cached = fromEnvironment
            return fromEnvironment
        }
        let server = try TemporaryPostgres.start()
        temporary = server
        cached = server.configuration
        return server.configuration
    }
}

/// Drops the databases created on a shared server when the process exits.
private enum DroppedAtExit {
    private static let databases = Locked<[(String, Configuration)]>([])

    static func add(_ name: String, on server: Configuration) {
        let first = databases.withLock { list in
            list.append((name, server))
            return list.count == 1
        }
        if first { atexit { DroppedAtExit.dropAll() } }
    }

    static func dropAll() {
        let all = databases.withLock { list in
            defer { list.removeAll() }
            return list
        }
        for (name, server) in all {
            guard let connection = PQconnectdb(server.connectionString()) else { continue }
            if PQstatus(connection) == CONNECTION_OK {
                PQclear(PQexec(connection, "DROP DATABASE IF EXISTS \(quoteIdentifier(name)) WITH (FORCE)"))
            }
            PQfinish(connection)
        }
    }
}
