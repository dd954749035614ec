// A stress worker process: runs StressRun against $DATABASE_URL (whose schema and shared
// graph another process seeded) and prints its ledger as JSON, for a test that runs several
// at once and checks the database against their ledgers. With `mode=watch` it is instead
// the other process of the cross-process merging tests (see HistoryWatcher); with
// `mode=staged` it runs StagedVersions' plan and waits inside its custom stage, to be killed.
//
//     DATABASE_URL=postgres://… postgres-data-stress seconds=60 threads=2 contexts=4 seed=7 name=a
//     DATABASE_URL=postgres://… postgres-data-stress mode=watch token-file=/tmp/token

import Foundation
import PostgresClient
import PostgresData
import StressWorkload

var options = StressOptions()
var mode = "stress"
var tokenFile: String?
for argument in CommandLine.arguments.dropFirst() {
    let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
    guard parts.count == 2 else {
        FileHandle.standardError.write(Data("expected key=value arguments (seconds, threads, contexts, seed, name, mode, token-file), got \(argument)\n".utf8))
        exit(2)
    }
    switch parts[0] {
    case "seconds": options.seconds = Double(parts[1]) ?? options.seconds
    case "threads": options.threads = Int(parts[1]) ?? options.threads
    case "contexts": options.contextsPerThread = Int(parts[1]) ?? options.contextsPerThread
    case "seed": options.seed = UInt64(parts[1]) ?? options.seed
    case "name": options.name = parts[1]
    case "mode": mode = parts[1]
    case "token-file": tokenFile = parts[1]
    default:
        FileHandle.standardError.write(Data("unknown argument \(parts[0]); known: seconds, threads, contexts, seed, name, mode, token-file\n".utf8))
        exit(2)
    }
}

if mode == "staged" {
    do {
        let configuration = try Configuration(url: ProcessInfo.processInfo.environment["DATABASE_URL"] ?? "")
        try await StagedVersions.plan(.announceAndWait).migrate(configuration: configuration)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("the staged migration stopped: \(error)\n".utf8))
        exit(1)
    }
}

if mode == "watch" {
    do {
        try await HistoryWatcher.run(tokenFile: tokenFile)
    } catch {
        FileHandle.standardError.write(Data("the watcher stopped: \(error)\n".utf8))
        exit(1)
    }
}

let container = PersistentContainer(name: "Stress", model: StressModel.model)
do {
    try await container.loadPersistentStores()
} catch {
    FileHandle.standardError.write(Data("cannot load the store: \(error)\n".utf8))
    exit(1)
}
let ledger = await StressRun.run(container, options: options)
let encoder = JSONEncoder()
encoder.outputFormatting = .sortedKeys
FileHandle.standardOutput.write(try encoder.encode(ledger))
