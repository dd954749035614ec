import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import StressWorkload
import Testing

/// Two OS processes on one database with persistent history: this test process saves, a
/// `postgres-data-stress mode=watch` process merges (see `HistoryWatcher`) and prints what
/// its context sees; killed and started again, it catches up from the token it kept.
@Suite("Cross-process merging through persistent history")
struct CrossProcessMergeTests {
    /// The watcher's output, read as it grows.
    struct Watcher {
        let process: ChildProcess
        let output: String
        let errors: String

        var lines: [String] {
            ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        func waitFor(_ what: String, _ line: @escaping (String) -> Bool) async throws {
            do {
                try await Deadline.poll("the watcher to print \(what)") {
                    guard process.isRunning else { throw WatcherStopped(lines: lines, errors: errorText) }
                    return lines.contains(where: line)
                }
            } catch let error as DeadlineExceeded {
                throw WatcherStopped(lines: lines, errors: "\(error); on standard error: " + errorText)
            }
        }

        var errorText: String {
            String(((try? String(contentsOfFile: errors, encoding: .utf8)) ?? "").suffix(2_000))
        }
    }

    struct WatcherStopped: Error, CustomStringConvertible {
        var lines: [String]
        var errors: String
        var description: String { "the watcher printed \(lines.suffix(8)); \(errors)" }
    }

    func startWatcher(_ binary: String, configuration: Configuration, directory: String, run: Int) async throws -> Watcher {
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = configuration.url(redactingPassword: false)
        let output = "\(directory)/watcher-\(run).out"
        let process = try ChildProcess([binary, "mode=watch", "token-file=\(directory)/token"], environment: environment,
                                       outputPath: output, errorPath: "\(directory)/watcher-\(run).err")
        let watcher = Watcher(process: process, output: output, errors: "\(directory)/watcher-\(run).err")
        try await watcher.waitFor("ready") { $0 == "ready" }
        return watcher
    }

    @Test func savesAndBatchUpdatesReachAnotherProcessWhichCatchesUpAfterARestart() async throws {
        guard let binary = ChildProcess.builtExecutable(named: "postgres-data-stress") else {
            Issue.record("postgres-data-stress is not built beside the tests: run `swift build --build-tests` first")
            return
        }
        let configuration = try await StressModel.seededDatabase(prefix: "pd_cross")
        let container = PersistentContainer(name: "Writer", model: StressModel.model)
        try await container.loadPersistentStores(configuration: configuration, options: .init(persistentHistoryTracking: true))
        let cards = try await container.performBackgroundTask { context in
            let board = try context.fetch(FetchRequest<Board>())[0]
            let cards = (1...3).map { number in
                let card = Card(context: context)
                card.token = "cross \(number)"
                card.title = "first"
                card.board = board
                return card
            }
            try context.save()
            return cards.map { $0.objectID.primaryKey! }
        }
        try await withTemporaryFolder([:]) { directory in
            let watcher = try await startWatcher(binary, configuration: configuration, directory: directory, run: 1)
            defer { watcher.process.kill() }

            // A save here: the other process's merging context shows the new title.
            try await container.performBackgroundTask { context in
                let card = try context.fetch(FetchRequest<Card>(predicate: try FetchPredicate(format: "token == 'cross 1'")))[0]
                card.title = "renamed"
                try context.save()
            }
            try await watcher.waitFor("the renamed card") { $0 == "refreshed \(cards[0]) renamed 0" }

            // A batch update bypasses every context; history carries it across.
            let context = container.newBackgroundContext()
            let updated = try await context.execute(BatchUpdateRequest(entity: Card.self, predicate: try FetchPredicate(format: "token BEGINSWITH 'cross'"),
                                                                       propertiesToUpdate: ["revision": 7]))
            #expect(updated.count == 3)
            for key in cards {
                try await watcher.waitFor("card \(key) at revision 7") { $0.hasPrefix("refreshed \(key) ") && $0.hasSuffix(" 7") }
            }
            try await watcher.waitFor("the batch's history") { $0 == "history update \(cards[2])" }

            // Killed; meanwhile this process inserts, updates and deletes.
            watcher.process.kill()
            #expect(await watcher.process.exit(within: .seconds(10)) != 0)
            let inserted = try await container.performBackgroundTask { context in
                let all = try context.fetch(FetchRequest<Card>(predicate: try FetchPredicate(format: "token BEGINSWITH 'cross'"),
                                                               sortDescriptors: [FetchSortDescriptor(key: "token")]))
                all[1].title = "while away"
                context.delete(all[2])
                let card = Card(context: context)
                card.token = "cross 4"
                card.title = "new"
                try context.save()
                return card.objectID.primaryKey!
            }
            // Started again from its token: it learns of all three from history.
            let restarted = try await startWatcher(binary, configuration: configuration, directory: directory, run: 2)
            defer { restarted.process.kill() }
            try await restarted.waitFor("the insert made while it was down") { $0 == "history insert \(inserted)" }
            try await restarted.waitFor("the delete made while it was down") { $0 == "history delete \(cards[2])" }
            try await restarted.waitFor("the update made while it was down") { $0 == "history update \(cards[1])" }
            // Only what it missed: one transaction, nothing it had seen before it was killed.
            #expect(restarted.lines.filter { $0.hasPrefix("remote") } == ["remote 1"])
        }
        await container.persistentStoreCoordinator.close()
    }
}
