import Foundation
import PostgresClient
import PostgresData
import PostgresDataTesting

/// How a stress run is shaped.
public struct StressOptions: Sendable, Codable {
    /// How long the workers run.
    public var seconds: Double = 60
    /// OS threads, each driving `contextsPerThread` private-queue contexts in turn.
    public var threads = 4
    public var contextsPerThread = 4
    /// The seed of the workers' random choices (each thread derives its own).
    public var seed: UInt64 = 1
    /// Prefixes the tokens of the cards this run creates (unique per process).
    public var name = "run"
    /// How many times one operation's block runs before its failure counts.
    public var attempts = 12

    /// The defaults: 60 s, 4 threads × 4 contexts, seed 1, 12 attempts per operation.
    public init() {}
}

/// Random inserts, updates, deletes, relationship changes and counter increments on the
/// shared graph of ``StressModel``, from many contexts at once, with the `error` merge
/// policy and ``ManagedObjectContext/performAndWait(retryingUpTo:_:)``; every committed
/// change goes into a ``StressLedger``.
public enum StressRun {
    /// Runs the workers to the end of `options.seconds` and returns their merged ledger. The
    /// workers are threads of their own; the caller's task waits without blocking a thread.
    public static func run(_ container: PersistentContainer, options: StressOptions) async -> StressLedger {
        let ledgers = Locked<[StressLedger]>([])
        let group = DispatchGroup()
        let deadline = Date().addingTimeInterval(options.seconds)
        for index in 0..<options.threads {
            group.enter()
            let thread = Thread {
                var worker = Worker(container: container, options: options, index: index)
                worker.run(until: deadline)
                ledgers.withLock { $0.append(worker.ledger) }
                group.leave()
            }
            thread.name = "stress \(options.name) \(index)"
            thread.start()
        }
        await withCheckedContinuation { continuation in
            group.notify(queue: .global()) { continuation.resume() }
        }
        return ledgers.withLock { $0.reduce(StressLedger()) { $0.merged(with: $1) } }
    }
}

/// One thread's contexts, random source, cards and ledger.
private struct Worker {
    let contexts: [ManagedObjectContext]
    let options: StressOptions
    let prefix: String
    var random: SplitMix64
    var ledger = StressLedger()
    var mine: [String] = []
    var created = 0

    init(container: PersistentContainer, options: StressOptions, index: Int) {
        contexts = (0..<options.contextsPerThread).map { number in
            let context = container.newBackgroundContext()
            context.name = "\(options.name)-\(index)-\(number)"
            context.mergePolicy = .error
            return context
        }
        self.options = options
        prefix = "\(options.name)-\(index)"
        random = SplitMix64(seed: options.seed &+ UInt64(index) &* 0x9E37_79B9)
    }

    mutating func run(until deadline: Date) {
        var turn = 0
        while Date() < deadline {
            let context = contexts[turn % contexts.count]
            turn += 1
            let operation = nextOperation()
            ledger.attempted += 1
            var runs = 0
            do {
                let effects = try context.performAndWait(retryingUpTo: options.attempts) { () throws -> [Effect] in
                    runs += 1
                    return try operation.run(in: context)
                }
                ledger.retries += runs - 1
                ledger.succeeded += 1
                apply(effects)
            } catch {
                ledger.retries += max(runs - 1, 0)
                ledger.failedCleanly += 1
                if ledger.finalErrors.count < 5 { ledger.finalErrors.append("\(error)") }
                // The failed save left its changes in the context: drop them.
                context.performAndWait { context.reset() }
            }
        }
    }

    private mutating func apply(_ effects: [Effect]) {
        for effect in effects {
            switch effect {
            case .card(let token, let state):
                ledger.cards[token] = state
                if state == nil {
                    mine.removeAll { $0 == token }
                } else if !mine.contains(token) {
                    mine.append(token)
                }
            case .increment(let counter):
                ledger.increments[counter, default: 0] += 1
            }
        }
    }

    private mutating func nextOperation() -> Operation {
        let roll = random.next(below: 100)
        if mine.isEmpty || roll < 30 {
            created += 1
            let token = "\(prefix)-\(created)"
            let card = Operation.NewCard(token: token, title: "card \(random.next(below: 1000))", board: pickBoard(), labels: pickLabels())
            return roll % 2 == 0 ? .insert(card) : .insertAndCount(card, pickCounter())
        }
        let token = mine[random.next(below: mine.count)]
        switch roll {
        case ..<60: return .update(token: token, title: "title \(random.next(below: 1000))", board: random.next(below: 3) == 0 ? pickBoard() : nil,
                                   labels: random.next(below: 2) == 0 ? pickLabels() : nil)
        case ..<70: return .delete(token: token)
        default: return .increment(pickCounter())
        }
    }

    private mutating func pickBoard() -> String { StressModel.boardNames[random.next(below: StressModel.boardNames.count)] }
    private mutating func pickCounter() -> String { StressModel.counterNames[random.next(below: StressModel.counterNames.count)] }
    private mutating func pickLabels() -> [String] {
        StressModel.labelNames.filter { _ in random.next(below: 3) == 0 }
    }
}

/// A committed change, as the ledger records it.
private enum Effect {
    case card(String, StressLedger.CardState?)
    case increment(String)
}

/// One unit of work: a block that runs in a context and saves.
private enum Operation {
    struct NewCard {
        var token: String
        var title: String
        var board: String
        var labels: [String]
    }

    case insert(NewCard)
    case insertAndCount(NewCard, String)
    case update(token: String, title: String, board: String?, labels: [String]?)
    case delete(token: String)
    case increment(String)

    func run(in context: ManagedObjectContext) throws -> [Effect] {
        var effects: [Effect] = []
        switch self {
        case .insert(let new), .insertAndCount(let new, _):
            let card = Card(context: context)
            card.token = new.token
            card.title = new.title
            card.board = try one(Board.self, named: new.board, in: context)
            card.labels = Set(try new.labels.map { try one(Label.self, named: $0, in: context) })
            effects.append(.card(new.token, state(of: card)))
            if case .insertAndCount(_, let counter) = self {
                try one(Counter.self, named: counter, in: context).value += 1
                effects.append(.increment(counter))
            }
        case .update(let token, let title, let board, let labels):
            let card = try self.card(token, in: context)
            card.title = title
            card.revision += 1
            if let board { card.board = try one(Board.self, named: board, in: context) }
            if let labels { card.labels = Set(try labels.map { try one(Label.self, named: $0, in: context) }) }
            effects.append(.card(token, state(of: card)))
        case .delete(let token):
            context.delete(try card(token, in: context))
            effects.append(.card(token, nil))
        case .increment(let counter):
            try one(Counter.self, named: counter, in: context).value += 1
            effects.append(.increment(counter))
        }
        try context.save()
        return effects
    }

    private func state(of card: Card) -> StressLedger.CardState {
        StressLedger.CardState(title: card.title, revision: card.revision, board: card.board?.name ?? "(none)",
                               labels: card.labels.map(\.name).sorted())
    }

    private func card(_ token: String, in context: ManagedObjectContext) throws -> Card {
        let request = FetchRequest<Card>(predicate: try FetchPredicate(format: "token == %@", token))
        guard let card = try context.fetch(request).first else { throw StressError("card \(token) is missing") }
        return card
    }

    private func one<Object: ManagedObject>(_ type: Object.Type, named name: String, in context: ManagedObjectContext) throws -> Object {
        let request = FetchRequest<Object>(predicate: try FetchPredicate(format: "name == %@", name))
        guard let object = try context.fetch(request).first else { throw StressError("\(Object.self) \(name) is missing: seed the graph first") }
        return object
    }
}

struct StressError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
