import Foundation
import PostgresData

/// The other process of the cross-process tests: it loads the stress model's store with
/// persistent history, keeps every card registered in a context that merges automatically,
/// and prints one line per thing it sees, flushed at once:
///
/// - `ready` once the store is loaded and the cards fetched;
/// - `refreshed <key> <title> <revision>` when a merge refreshed a card (read after the merge);
/// - `inserted <key>` / `deleted <key>` for cards another process inserted or deleted;
/// - `remote <transactions>` for each batch of history read, after writing its token to
///   `tokenFile` (so that a restarted watcher catches up from there), then
///   `history insert|update|delete <key>` for each card it changed.
public enum HistoryWatcher {
    /// Watches the store at `$DATABASE_URL` until the process is killed.
    public static func run(tokenFile: String?) async throws -> Never {
        let container = PersistentContainer(name: "Watcher", model: StressModel.model)
        let remote = container.persistentStoreCoordinator.remoteChanges()
        let start = tokenFile.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
            .flatMap { PersistentHistoryToken($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        try await container.loadPersistentStores(options: .init(persistentHistoryTracking: true, remoteChangesStartToken: start))
        let context = container.newBackgroundContext()
        context.name = "watcher"
        context.automaticallyMergesChangesFromParent = true
        // It keeps every card it loaded, as a screen showing them would: a merge refreshes
        // (and reports) only objects in use.
        context.retainsRegisteredObjects = true
        let changes = context.notifications()
        // Loaded, not faults.
        _ = try await context.perform { try context.fetch(FetchRequest<Card>()).map(\.title) }
        say("ready")

        let cards = Task {
            for await case .objectsDidChange(let change) in changes {
                let lines = await context.perform { () -> [String] in
                    var lines: [String] = []
                    for id in change.refreshedObjectIDs where id.entity.name == "Card" {
                        guard let card = try? context.existingObject(with: id) as? Card else { continue }
                        lines.append("refreshed \(id.primaryKey ?? 0) \(card.title) \(card.revision)")
                    }
                    lines += change.insertedObjectIDs.filter { $0.entity.name == "Card" }.map { "inserted \($0.primaryKey ?? 0)" }
                    lines += change.deletedObjectIDs.filter { $0.entity.name == "Card" }.map { "deleted \($0.primaryKey ?? 0)" }
                    return lines
                }
                lines.forEach(say)
            }
        }
        for await change in remote {
            if let tokenFile {
                try change.token.description.write(toFile: tokenFile, atomically: true, encoding: .utf8)
            }
            say("remote \(change.transactions.count)")
            for transaction in change.transactions {
                for item in transaction.changes where item.changedObjectID.entity.name == "Card" {
                    say("history \(item.changeType) \(item.changedObjectID.primaryKey ?? 0)")
                }
            }
        }
        cards.cancel()
        throw CancellationError()
    }

    private static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
