import Foundation
import Hummingbird
import PostgresData
import ServiceLifecycle
import TodoExample

/// `GET /items/changes[?done=&search=&minWeight=]`: server-sent events of a
/// ``FetchedResultsController`` over the matching items, on a context that merges every
/// save — this process's and, through persistent history, other processes'.
///
/// The stream opens with `event: ready`; each change is `event: change` with the
/// difference as JSON (each object's change with its old and new position, and the IDs in
/// order); a comment every 15 s tells a dead client from a quiet one. It ends when the
/// client leaves or the server shuts down gracefully.
struct ItemChanges: Sendable {
    let container: PersistentContainer
    var keepAliveInterval = Duration.seconds(15)

    /// One change as the stream sends it.
    struct Event: Encodable {
        struct Change: Encodable {
            var type: String
            var id: Int64
            var from: Int?
            var to: Int?
        }
        var changes: [Change]
        var ids: [Int64]

        init(_ difference: FetchedResultsDifference) {
            changes = difference.objectChanges.map { change in
                let type = switch change.type {
                case .insert: "insert"
                case .delete: "delete"
                case .move: "move"
                case .update: "update"
                }
                return Change(type: type, id: change.objectID.primaryKey ?? 0, from: change.indexPath?.item, to: change.newIndexPath?.item)
            }
            ids = difference.objectIDs.flatMap { $0.map { $0.primaryKey ?? 0 } }
        }
    }

    @Sendable func stream(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let query = try ItemQuery(request.uri.queryParameters)
        let unit = container.newBackgroundContext()
        unit.automaticallyMergesChangesFromParent = true
        let differences = try await unit.perform {
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest<TodoItem>(predicate: query.predicate, sortDescriptors: ItemQuery.order),
                managedObjectContext: unit)
            try controller.performFetch()
            return controller.differences()   // keeps the controller, and so the context, alive
        }
        let interval = keepAliveInterval
        let body = ResponseBody { writer in
            let (events, continuation) = AsyncStream<String>.makeStream()
            let forwarding = Task {
                let encoder = JSONEncoder()
                for await difference in differences {
                    let json = (try? encoder.encode(Event(difference))).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
                    continuation.yield("event: change\ndata: \(json)\n\n")
                }
                continuation.finish()
            }
            let keepingAlive = Task {
                while (try? await Task.sleep(for: interval)) != nil { continuation.yield(": keep-alive\n\n") }
            }
            // A graceful shutdown ends the stream, so that the server does not wait for the client.
            let watchingShutdown = Task {
                try? await gracefulShutdown()
                continuation.finish()
            }
            defer {
                forwarding.cancel()
                keepingAlive.cancel()
                watchingShutdown.cancel()
            }
            try await writer.write(ByteBuffer(string: "event: ready\ndata: {}\n\n"))
            // A write to a client that left throws, which ends the stream.
            for await event in events { try await writer.write(ByteBuffer(string: event)) }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"], body: body)
    }
}
