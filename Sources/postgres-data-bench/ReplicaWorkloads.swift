import Foundation
import PostgresClient
import PostgresData

/// What a read replica costs and saves: small saves by a container with a replica (A: each
/// save also reads the WAL position after its commit) against one without (B); fetches of a
/// read-only context on the replica (A) against the same fetches on the primary (B); and a
/// save followed by a fetch that must see it, routed by the replay check (A), against the
/// same on the primary alone (B).
func makeReplicaWorkloads(plain: PersistentContainer, replicated: PersistentContainer, client connection: Connection,
                          standby: Connection) -> [Workload] {
    let count = 200
    let waitForReplay: () async throws -> Void = {
        try await fillItems(connection, rows: 1_000)
        try await waitForStandbyReplay(of: connection, on: standby)
    }
    let saves: @Sendable (PersistentContainer) async throws -> Void = { container in
        let context = container.newBackgroundContext()
        for i in 0..<count {
            try await context.perform { try saveItem(named: "small-\(i)", in: context) }
        }
    }
    let reads: @Sendable (ManagedObjectContext) async throws -> Void = { context in
        for i in 0..<count {
            try await context.perform {
                var request = FetchRequest<BenchItem>(predicate: try FetchPredicate(format: "name == %@", "item-\(i * 5 + 1)"))
                request.returnsObjectsAsFaults = false
                let found = try context.fetch(request).count
                precondition(found == 1)
            }
        }
    }
    let readsOwnWrites: @Sendable (PersistentContainer) async throws -> Void = { container in
        let context = container.newBackgroundContext()
        for i in 0..<count {
            try await context.perform {
                try saveItem(named: "mine-\(i)", in: context)
                var request = FetchRequest<BenchItem>(predicate: try FetchPredicate(format: "name == %@", "mine-\(i)"))
                request.allowsReadingFromReplica = true
                let found = try context.fetch(request).count
                precondition(found == 1)
            }
        }
    }
    return [
        Workload(name: "R \(count) saves of 1 object: replica on/off", prepare: waitForReplay, client: {
            try await saves(replicated)
        }, raw: {
            try BlockingWait.run { try await saves(plain) }
        }),
        Workload(name: "R \(count) fetches by name: replica/primary", prepare: waitForReplay, client: {
            try await reads(replicated.newReadOnlyContext())
        }, raw: {
            try BlockingWait.run { try await reads(plain.newBackgroundContext()) }
        }),
        Workload(name: "R \(count) save+fetch own write: replica/primary", prepare: waitForReplay, client: {
            try await readsOwnWrites(replicated)
        }, raw: {
            try BlockingWait.run { try await readsOwnWrites(plain) }
        }),
    ]
}

/// Inserts one item and saves it (one transaction); call it on the context's queue.
private func saveItem(named name: String, in context: ManagedObjectContext) throws {
    let item = BenchItem(context: context)
    item.name = name
    item.createdAt = epoch
    try context.save()
}

/// Returns once `standby` has replayed all the WAL `primary` has written so far.
func waitForStandbyReplay(of primary: Connection, on standby: Connection) async throws {
    let target = try await primary.query("SELECT pg_current_wal_insert_lsn()::text")[0].decode(String.self, at: 0)
    while try await !standby.query("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", target)[0].decode(Bool.self, at: 0) {
        try await Task.sleep(for: .milliseconds(5))
    }
}
