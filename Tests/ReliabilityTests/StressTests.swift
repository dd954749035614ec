import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting
import StressWorkload
import Testing

/// Many contexts changing one graph at once, with the `error` merge policy and retries; at
/// the end the database must equal the ledger of the saves that succeeded.
@Suite("Concurrency stress: the database equals the sum of the successful saves")
struct StressTests {
    /// 60 seconds, as the reliability report states; `STRESS_SECONDS` shortens a local run.
    static let seconds = Double(ProcessInfo.processInfo.environment["STRESS_SECONDS"] ?? "") ?? 60

    private func check(_ ledger: StressLedger, on configuration: Configuration, _ label: String) async throws {
        let connection = try await Connection.connect(configuration)
        let problems = try await ledger.differences(on: connection)
        await connection.close()
        #expect(problems.isEmpty, "\(problems.prefix(5))")
        #expect(ledger.succeeded > 0 && ledger.increments.values.reduce(0, +) > 0, "the run did nothing: \(ledger.finalErrors)")
        #expect(ledger.attempted == ledger.succeeded + ledger.failedCleanly)
        print("RELIABILITY \(label): \(ledger.attempted) operations attempted, \(ledger.succeeded) succeeded, "
              + "\(ledger.failedCleanly) failed cleanly, \(ledger.retries) retries, \(ledger.cards.count) cards and "
              + "\(ledger.increments.values.reduce(0, +)) increments checked, lost \(problems.count)")
    }

    @Test func sixteenContextsOnFourThreads() async throws {
        try await MemoryIntensiveTests.sharingWithOthers { try await runSixteenContextsOnFourThreads() }
    }

    private func runSixteenContextsOnFourThreads() async throws {
        let configuration = try await StressModel.seededDatabase(prefix: "pd_stress")
        let container = PersistentContainer(name: "Stress", model: StressModel.model)
        try await container.loadPersistentStores(configuration: configuration)
        var options = StressOptions()
        options.seconds = Self.seconds
        options.seed = 42
        options.name = "in-process"
        let ledger = await StressRun.run(container, options: options)
        await container.persistentStoreCoordinator.close()
        try await check(ledger, on: configuration, "16 contexts on 4 threads")
    }

    @Test func twoProcessesOnOneDatabase() async throws {
        try await MemoryIntensiveTests.sharingWithOthers { try await runTwoProcesses() }
    }

    private func runTwoProcesses() async throws {
        let configuration = try await StressModel.seededDatabase(prefix: "pd_stress")
        guard let binary = ChildProcess.builtExecutable(named: "postgres-data-stress") else {
            Issue.record("postgres-data-stress is not built beside the tests: run `swift build --build-tests` first")
            return
        }
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = configuration.url(redactingPassword: false)
        try await withTemporaryFolder([:]) { directory in
            try await runWorkers(binary: binary, environment: environment, configuration: configuration, directory: directory)
        }
    }

    private func runWorkers(binary: String, environment: [String: String], configuration: Configuration, directory: String) async throws {
        let workers = try ["a", "b"].enumerated().map { index, name in
            try ChildProcess([binary, "seconds=\(Self.seconds)", "threads=2", "contexts=4", "seed=\(7 + index)", "name=\(name)"],
                             environment: environment, outputPath: "\(directory)/\(name).json", errorPath: "\(directory)/\(name).err")
        }
        var ledger = StressLedger()
        for (worker, name) in zip(workers, ["a", "b"]) {
            let status = await worker.exit(within: .seconds(Self.seconds + 120))
            let errors = (try? String(contentsOfFile: "\(directory)/\(name).err", encoding: .utf8)) ?? ""
            try #require(status == 0, "worker \(name) ended with status \(status): \(errors.suffix(2000))")
            let output = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name).json"))
            ledger = ledger.merged(with: try JSONDecoder().decode(StressLedger.self, from: output))
        }
        try await check(ledger, on: configuration, "2 processes × 8 contexts on 2 threads")
    }
}
