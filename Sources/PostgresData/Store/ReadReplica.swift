import Logging
import PostgresClient

/// A streaming replica of the store's database that serves reads: its connection pool and
/// how far it is known to have replayed the primary's WAL.
final class ReadReplica: Sendable {
    let pool: ConnectionPool
    /// What the replica has replayed at least (the highest position it reported): reads
    /// needing no more than this go to it without asking again.
    private let replayed = Locked<WALPosition?>(nil)
    private let counters = Locked(ReplicaStatistics())

    private init(pool: ConnectionPool) {
        self.pool = pool
    }

    /// Connects to the replica and checks that it is a physical standby of `primary`'s
    /// cluster: rows read there carry the same row versions (`xmin`) as on the primary, which
    /// the version checks of saves rely on. A logical replica or an unrelated server is an error.
    static func open(configuration: Configuration, primary: ConnectionPool, maximumConnections: Int, leaseTimeout: Duration,
                     logger: Logger) async throws -> ReadReplica {
        let pool = ConnectionPool(configuration: configuration, maximumConnections: maximumConnections,
                                  leaseTimeout: leaseTimeout, logger: logger)
        do {
            let (inRecovery, identifier) = try await pool.withConnection(resettingSession: false) { connection in
                let rows = try await connection.query("SELECT pg_is_in_recovery()")
                return (try rows[0].decode(Bool.self, at: 0), try? await systemIdentifier(on: connection))
            }
            let server = "\(configuration["host"] ?? "localhost"):\(configuration["port"] ?? "5432")"
            guard inRecovery else {
                throw PostgresDataError.invalidRequest(
                    "the read replica at \(server) is not a standby (pg_is_in_recovery() is false); PostgresData reads row versions there, which only a physical streaming replica of the store's server shares with it. Name a standby (primary_conninfo pointing at the primary), or no replica")
            }
            let primaryIdentifier = try? await primary.withConnection(resettingSession: false) { try await systemIdentifier(on: $0) }
            if let identifier, let primaryIdentifier, identifier != primaryIdentifier {
                throw PostgresDataError.invalidRequest(
                    "the read replica at \(server) replicates another cluster (system identifier \(identifier), the store's is \(primaryIdentifier)); name a standby of the store's server")
            }
            return ReadReplica(pool: pool)
        } catch {
            await pool.shutdown()
            throw error
        }
    }

    /// The cluster's identity, the same on a primary and its physical standbys (nil when the
    /// role may not read it).
    private static func systemIdentifier(on connection: Connection) async throws -> Int64 {
        try await connection.query("SELECT system_identifier FROM pg_control_system()")[0].decode(Int64.self, at: 0)
    }

    var statistics: ReplicaStatistics { counters.withLock { $0 } }

    func count(_ route: ReplicaStatistics.Route) {
        counters.withLock { $0.count(route) }
    }

    /// True when the replica has replayed `position`; asks it (one query on `connection`,
    /// a connection to it) only when the last answer was not far enough.
    func hasReplayed(_ position: WALPosition, on connection: Connection) async throws -> Bool {
        if let known = replayed.withLock({ $0 }), known >= position { return true }
        guard let now = try WALPosition.decode(try await connection.query(WALPosition.select("pg_last_wal_replay_lsn"))) else {
            // Promoted since it was opened: its positions no longer compare with the primary's.
            return false
        }
        replayed.withLock { $0 = max($0 ?? now, now) }
        return now >= position
    }
}

/// Where the reads meant for the read replica went, since the store was loaded.
///
/// No Core Data equivalent. Watch it to see how often read-your-writes or an unavailable
/// replica send reads to the primary.
public struct ReplicaStatistics: Sendable, Hashable {
    /// Reads the replica served.
    public var readsOnReplica = 0
    /// Reads sent to the primary because the replica had not yet replayed the writes the
    /// context must see (``ManagedObjectContext/replicaConsistency``).
    public var readsOnPrimaryAwaitingReplay = 0
    /// Reads sent to the primary because no connection to the replica could be opened.
    public var readsOnPrimaryReplicaUnavailable = 0

    enum Route { case replica, awaitingReplay, replicaUnavailable }

    mutating func count(_ route: Route) {
        switch route {
        case .replica: readsOnReplica += 1
        case .awaitingReplay: readsOnPrimaryAwaitingReplay += 1
        case .replicaUnavailable: readsOnPrimaryReplicaUnavailable += 1
        }
    }
}
