import Foundation
import Logging
import PostgresClient
import PostgresData
import PostgresDataLifecycle
import PostgresDataTesting
import ServiceLifecycle
import Testing

@Entity final class Job: ManagedObject {
    @Attribute(.unique) var token: String
}

/// The store under a ServiceGroup: a graceful shutdown while saves are under way.
@Suite struct PersistentContainerServiceTests {
    enum Outcome: Sendable, Equatable {
        case saved
        case refused
        case failed(String)
    }

    @Test func aGracefulShutdownLetsSavesUnderWayFinishRefusesNewOnesAndLosesNothing() async throws {
        let configuration = try await TestDatabase.fresh(prefix: "pd_service")
        let container = PersistentContainer(name: "Jobs", model: ManagedObjectModel(Job.self))
        try await container.loadPersistentStores(configuration: configuration, options: .init(createSchemaIfMissing: true))
        // Long enough for the 30 saves on a loaded machine (under the thread sanitizer, with the
        // whole suite running, 6 were still under way after 20 s); the drain ends when they do.
        let group = ServiceGroup(services: [PersistentContainerService(container, drainTimeout: .seconds(120))],
                                 logger: Logger(label: "test.group"))
        let running = Task { try await group.run() }

        let started = Locked(0)
        func unit(_ token: String, pause: Duration) -> Task<Outcome, Never> {
            Task {
                let context = container.newBackgroundContext()
                do {
                    try await context.perform {
                        started.withLock { $0 += 1 }
                        let job = Job(context: context)
                        job.token = token
                        try await Task.sleep(for: pause)  // the request's own work, under way at the shutdown
                        try await context.save()
                    }
                    return .saved
                } catch PostgresDataError.shuttingDown {
                    return .refused
                } catch {
                    return .failed("\(error)")
                }
            }
        }
        let underWay = (0..<30).map { unit("before-\($0)", pause: .milliseconds(300)) }
        try await Deadline.poll("30 units under way") { started.withLock { $0 } == 30 }
        await group.triggerGracefulShutdown()
        try await Deadline.poll("the store draining") { container.persistentStoreCoordinator.isDraining }
        let late = (0..<5).map { unit("after-\($0)", pause: .zero) }

        var outcomes: [Outcome] = []
        for task in underWay { outcomes.append(await task.value) }
        var lateOutcomes: [Outcome] = []
        for task in late { lateOutcomes.append(await task.value) }
        try await running.value

        #expect(outcomes == Array(repeating: .saved, count: 30), "\(outcomes)")
        #expect(lateOutcomes == Array(repeating: .refused, count: 5), "\(lateOutcomes)")
        // Every save that returned is in the database, and nothing else.
        let connection = try await Connection.connect(configuration)
        let tokens = try await connection.query("SELECT token FROM job ORDER BY token").map { try $0.decode(String.self, at: 0) }
        await connection.close()
        #expect(tokens == (0..<30).map { "before-\($0)" }.sorted())
        // The store is closed.
        await #expect(throws: PostgresDataError.self) {
            try await container.newBackgroundContext().perform { _ = try container.persistentStoreCoordinator.connectionPool }
        }
    }
}
