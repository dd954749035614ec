import Foundation
import Logging
import PostgresClient

/// The remote-change listener of one coordinator: a dedicated connection that `LISTEN`s on
/// the history channel; on each notification from another coordinator it reads the history
/// after its token and hands it to the coordinator. When the connection is lost it
/// reconnects (backing off from 50 ms to 5 s) and catches up from its token, so that no
/// change is missed.
final class RemoteChangeListener: Sendable {
    typealias Delivery = @Sendable (PersistentHistoryResult) async -> Void

    private let configuration: Configuration
    private let model: ManagedObjectModel
    private let instanceID: UUID
    private let logger: Logger
    private let deliver: Delivery
    private let state: Locked<State>

    private struct State {
        var token: PersistentHistoryToken
        var task: Task<Void, Never>?
    }

    init(configuration: Configuration, model: ManagedObjectModel, instanceID: UUID, start: PersistentHistoryToken,
         logger: Logger, deliver: @escaping Delivery) {
        var configuration = configuration
        // Named so that an administrator sees which session it is (pg_stat_activity).
        configuration["application_name"] = String(((configuration["application_name"] ?? "PostgresData") + " remote-change listener").suffix(63))
        self.configuration = configuration
        self.model = model
        self.instanceID = instanceID
        self.logger = logger
        self.deliver = deliver
        self.state = Locked(State(token: start))
    }

    /// The position after the last history delivered.
    var token: PersistentHistoryToken { state.withLock { $0.token } }

    /// Connects and listens (throwing when it cannot), then keeps listening in a task.
    func start() async throws {
        let connection = try await listeningConnection()
        let task = Task { await self.run(connection) }
        state.withLock { $0.task = task }
    }

    /// Stops listening and closes the connection.
    func stop() async {
        let task = state.withLock { state -> Task<Void, Never>? in
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
        await task?.value
    }

    private func listeningConnection() async throws -> Connection {
        let connection = try await Connection.connect(configuration, logger: logger)
        do {
            try await connection.listen(on: HistorySchema.channel)
        } catch {
            await connection.close()
            throw error
        }
        return connection
    }

    private func run(_ first: Connection) async {
        var connection: Connection? = first
        var delay = Duration.milliseconds(50)
        let ownPayload = instanceID.uuidString.lowercased()
        while !Task.isCancelled {
            do {
                if connection == nil {
                    connection = try await listeningConnection()
                    delay = .milliseconds(50)
                    logger.info("remote-change listener reconnected; catching up from history")
                }
                guard let listening = connection else { continue }
                // Whatever was written since the token (at start, or while disconnected).
                try await catchUp(on: listening)
                for try await notification in listening.notifications() {
                    let others = try await [notification] + listening.queuedNotifications()
                    if others.allSatisfy({ $0.payload.lowercased() == ownPayload }) { continue }
                    try await catchUp(on: listening)
                }
            } catch {
                if Task.isCancelled { break }
                logger.warning("remote-change listener lost its connection; reconnecting", metadata: ["error": "\(error)"])
                await connection?.close()
                connection = nil
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
        await connection?.close()
    }

    private func catchUp(on connection: Connection) async throws {
        let request = PersistentHistoryChangeRequest.fetchHistory(after: token)
        let result = try await HistoryFetch(request: request, model: model, excluding: instanceID).run(on: connection)
        if let token = result.token { state.withLock { $0.token = token } }
        if !result.transactions.isEmpty { await deliver(result) }
    }
}
