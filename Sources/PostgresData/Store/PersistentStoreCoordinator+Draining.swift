import PostgresClient

/// The units of work a coordinator has under way: context blocks started and not ended.
struct UnitsInFlight: Sendable {
    var count = 0
    var isDraining = false
}

extension PersistentStoreCoordinator {
    /// Counts a block starting; with `refusing`, throws ``PostgresDataError/shuttingDown``
    /// once the store drains — unless the block runs inside a unit already under way.
    func beginUnit(refusing: Bool) throws(PostgresDataError) {
        let nested = Self.isInsideUnit
        let admitted = unitsInFlight.withLock { units -> Bool in
            if refusing && units.isDraining && !nested { return false }
            units.count += 1
            return true
        }
        if !admitted { throw .shuttingDown }
    }

    /// Counts a block ending.
    func endUnit() {
        unitsInFlight.withLock { $0.count -= 1 }
    }

    /// True inside an async context block (a unit of work under way).
    @TaskLocal static var isInsideUnit = false

    /// Refuses new units of work and waits until those under way have ended, at most
    /// `timeout`; returns how many were still under way then (0 when all ended).
    ///
    /// Call it before ``close()`` on graceful shutdown (the `Service` of the
    /// `PostgresDataLifecycle` module does): saves under way commit or throw, none is cut.
    public func drain(timeout: Duration) async -> Int {
        unitsInFlight.withLock { $0.isDraining = true }
        let clock = ContinuousClock()
        let end = clock.now + timeout
        while true {
            let remaining = unitsInFlight.withLock { $0.count }
            if remaining == 0 || clock.now >= end { return remaining }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// True once ``drain(timeout:)`` began.
    public var isDraining: Bool { unitsInFlight.withLock { $0.isDraining } }
}
