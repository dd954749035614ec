import CoreMetrics

/// A pool's swift-metrics instruments, named as OpenTelemetry's database client conventions
/// name them (`db.client.connection.*`), each with the pool's name as the
/// `db.client.connection.pool.name` dimension.
///
/// The factory is the one current when the pool is created (`MetricsSystem.factory`: the
/// bootstrapped backend, or the one a test bound with `withMetricsFactory`).
struct PoolMetrics: Sendable {
    /// Connections idle in the pool (`db.client.connection.state` = `idle`).
    let idle: Meter
    /// Connections leased now (`db.client.connection.state` = `used`).
    let used: Meter
    /// Leases waiting for a connection.
    let pendingRequests: Meter
    /// The most connections the pool opens.
    let maximum: Meter
    /// How long each lease waited for its connection.
    let waitTime: Timer
    /// How long each lease held its connection.
    let useTime: Timer
    /// How long opening a connection took.
    let createTime: Timer
    /// Leases that gave up waiting (the lease timeout).
    let timeouts: Counter

    init(poolName: String, maximumConnections: Int, factory: any MetricsFactory = MetricsSystem.factory) {
        let pool = ("db.client.connection.pool.name", poolName)
        idle = Meter(label: "db.client.connection.count", dimensions: [("db.client.connection.state", "idle"), pool], factory: factory)
        used = Meter(label: "db.client.connection.count", dimensions: [("db.client.connection.state", "used"), pool], factory: factory)
        pendingRequests = Meter(label: "db.client.connection.pending_requests", dimensions: [pool], factory: factory)
        maximum = Meter(label: "db.client.connection.max", dimensions: [pool], factory: factory)
        waitTime = Timer(label: "db.client.connection.wait_time", dimensions: [pool], factory: factory)
        useTime = Timer(label: "db.client.connection.use_time", dimensions: [pool], factory: factory)
        createTime = Timer(label: "db.client.connection.create_time", dimensions: [pool], factory: factory)
        timeouts = Counter(label: "db.client.connection.timeouts", dimensions: [pool], factory: factory)
        maximum.set(maximumConnections)
    }

    /// The counts last published, so that a state change publishes only what moved.
    struct Published: Sendable {
        var idle = -1, used = -1, pending = -1
    }

    /// Publishes the pool's counts; called under the pool's lock, so that values arrive in
    /// the order the state changed.
    func publish(idle: Int, used: Int, pending: Int, _ published: inout Published) {
        if idle != published.idle { self.idle.set(idle); published.idle = idle }
        if used != published.used { self.used.set(used); published.used = used }
        if pending != published.pending { pendingRequests.set(pending); published.pending = pending }
    }
}

extension Timer {
    /// Records a `Duration` (swift-metrics' own form lives in the `Metrics` module, which
    /// brings Dispatch and Foundation along).
    package func record(_ duration: Duration) {
        recordNanoseconds(Int64(clamping: duration.nanosecondsClamped))
    }
}
