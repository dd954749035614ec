import PostgresClient

/// Records what an async sequence yields, from a task of its own, so that a test can wait
/// for an element with a deadline instead of iterating (and perhaps waiting forever).
///
/// ```swift
/// let changes = StreamRecorder(context.notifications())
/// try await context.perform { … }
/// let merged = try await changes.first("the merge") { if case .objectsDidChange = $0 { true } else { false } }
/// ```
public final class StreamRecorder<Element: Sendable>: Sendable {
    private let elements = Locked<[Element]>([])
    private let task: Locked<Task<Void, Never>?> = Locked(nil)

    /// Starts recording `sequence`.
    public init<Sequence: AsyncSequence & Sendable>(_ sequence: Sequence) where Sequence.Element == Element {
        let elements = elements
        task.withLock {
            $0 = Task {
                do {
                    for try await element in sequence { elements.withLock { $0.append(element) } }
                } catch {}
            }
        }
    }

    deinit {
        task.withLock { $0?.cancel() }
    }

    /// Everything recorded so far, oldest first.
    public var recorded: [Element] { elements.withLock { $0 } }

    /// The first recorded element that satisfies `predicate`, waiting for it up to `limit`.
    public func first(_ what: String, limit: Duration = .seconds(30), where predicate: (Element) -> Bool) async throws -> Element {
        var found: Element?
        try await Deadline.poll(what, limit: limit) {
            found = recorded.first(where: predicate)
            return found != nil
        }
        return found!
    }
}
