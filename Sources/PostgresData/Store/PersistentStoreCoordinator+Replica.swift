import PostgresClient

extension PersistentStoreCoordinator {
    /// Where the reads meant for the read replica went since the store was loaded; nil
    /// without a replica (``StoreOptions/readReplicaConfiguration``). Export it to your
    /// metrics to see how often read-your-writes sends reads to the primary.
    ///
    /// No Core Data equivalent.
    public var replicaStatistics: ReplicaStatistics? {
        (try? loaded())?.replica?.statistics
    }

    /// Runs a read with a pooled connection: in the snapshot of the work's query generation
    /// when its context is pinned; else to the replica when the work's ``StoreAccess``
    /// allows it and the replica has replayed what the work must see, else to the primary. A
    /// replica that cannot be reached sends the read to the primary.
    func withReadConnection<T: Sendable>(_ access: StoreAccess?, _ body: (Connection) async throws -> T) async throws -> T {
        let loaded = try loaded()
        if let generation = access?.generation {
            requests.withLock { $0 += 1 }
            do {
                return try await generation.withConnection(body)
            } catch {
                throw Self.wrap(error, constraints: loaded.constraints)
            }
        }
        guard let access, access.readsFromReplica, let replica = loaded.replica else {
            return try await withConnection(of: loaded, body)
        }
        let connection: Connection
        do {
            connection = try await replica.pool.lease(resettingSession: false)
        } catch let error as PostgresError where Self.meansUnreachable(error) {
            logger.warning("the read replica is unavailable, reading from the primary: \(error)")
            replica.count(.replicaUnavailable)
            return try await withConnection(of: loaded, body)
        } catch {
            throw Self.wrap(error, constraints: loaded.constraints)
        }
        requests.withLock { $0 += 1 }
        let result: T?
        do {
            if let required = access.requiredReplayPosition, !(try await replica.hasReplayed(required, on: connection)) {
                result = nil
            } else {
                result = try await body(connection)
            }
        } catch {
            await replica.pool.release(connection)
            throw Self.wrap(error, constraints: loaded.constraints)
        }
        await replica.pool.release(connection)
        if let result {
            replica.count(.replica)
            return result
        }
        replica.count(.awaitingReplay)
        return try await withConnection(of: loaded, body)
    }

    /// Runs writes with a pooled connection of the primary. With a read replica, the WAL
    /// position after them is read once they have committed (one more round trip) and
    /// noted, so that reads that must see them wait for the replica to replay it.
    func withWriteConnection<T: Sendable>(_ access: StoreAccess?, _ body: (Connection) async throws -> T) async throws -> T {
        let loaded = try loaded()
        guard loaded.replica != nil else { return try await withConnection(of: loaded, body) }
        let (result, position) = try await withConnection(of: loaded) { connection in
            let result = try await body(connection)
            let position = try WALPosition.decode(try await connection.query(WALPosition.select("pg_current_wal_insert_lsn")))
            return (result, position)
        }
        if let position {
            lastCommitPosition.withLock { $0 = max($0 ?? position, position) }
            access?.didCommit?(position)
        }
        return result
    }

    /// Errors that say the server could not be reached at all (nothing ran there).
    private static func meansUnreachable(_ error: PostgresError) -> Bool {
        switch error.kind {
        case .connectionFailed, .poolTimeout: true
        default: false
        }
    }
}
