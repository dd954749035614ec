import Foundation
import InMemoryTracing
import Tracing

/// The process's tracer during the tests: InMemoryTracing's spans, kept only for traces a
/// test starts with a root span named `test: …`, so that the other suites' operations (one
/// process runs every test target) cost a span each and keep nothing.
///
/// swift-distributed-tracing 1.7 has no task-local tracer yet, so the tracer is
/// bootstrapped once for the process, the first time a test asks for it.
final class TraceRecorder: Tracer, @unchecked Sendable {
    static let shared: TraceRecorder = {
        let recorder = TraceRecorder()
        InstrumentationSystem.bootstrap(recorder)
        return recorder
    }()

    private let lock = NSLock()
    private var nextID = 0
    private var testTraces: Set<String> = []
    private var finished: [FinishedInMemorySpan] = []

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        let parent = context()
        let (spanContext, kept) = lock.withLock { () -> (InMemorySpanContext, Bool) in
            nextID += 1
            let id = String(nextID)
            if let outer = parent.inMemorySpanContext {
                return (InMemorySpanContext(traceID: outer.traceID, spanID: id, parentSpanID: outer.spanID), testTraces.contains(outer.traceID))
            }
            guard operationName.hasPrefix("test: ") else { return (InMemorySpanContext(traceID: id, spanID: id, parentSpanID: nil), false) }
            testTraces.insert(id)
            return (InMemorySpanContext(traceID: id, spanID: id, parentSpanID: nil), true)
        }
        return InMemorySpan(operationName: operationName, context: parent, spanContext: spanContext, kind: kind,
                            startInstant: instant()) { [weak self] span in
            guard kept, let self else { return }
            self.lock.withLock { self.finished.append(span) }
        }
    }

    func forceFlush() {}

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract)
        where Extract.Carrier == Carrier {}

    func inject<Carrier, Inject: Injector>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
        where Inject.Carrier == Carrier {}

    /// Runs `body` under a new test trace's root span and returns the trace's finished spans
    /// (the root's children and their descendants), oldest first.
    func trace(_ name: String, _ body: () async throws -> Void) async throws -> [FinishedInMemorySpan] {
        var traceID = ""
        try await withSpan("test: \(name)") { root in
            traceID = root.context.inMemorySpanContext?.traceID ?? ""
            try await body()
        }
        return lock.withLock { finished.filter { $0.traceID == traceID && $0.operationName != "test: \(name)" } }
    }
}

extension FinishedInMemorySpan {
    /// An attribute as text (`"postgresql"`, `"3"`), or nil.
    func text(_ name: String) -> String? {
        attributes.get(name).map { attribute in
            switch attribute {
            case .string(let value): value
            case .int64(let value): String(value)
            case .bool(let value): String(value)
            default: "\(attribute)"
            }
        }
    }
}
