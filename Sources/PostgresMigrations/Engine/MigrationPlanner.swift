/// The pure part of the runner: from the files and the history, what each version's state
/// is and what `up` or `down` must run. Nothing here touches a database.
public struct MigrationPlanner: Sendable {
    /// The files, in version order.
    public let migrations: [Migration]
    /// The history rows, in version order.
    public let history: [AppliedMigration]

    /// A planner over the files of a folder and the rows of the history table.
    public init(migrations: [Migration], history: [AppliedMigration]) {
        self.migrations = migrations.sorted { $0.version < $1.version }
        self.history = history.sorted { $0.version < $1.version }
    }

    private var baseline: MigrationVersion? {
        history.last { $0.kind == .baseline }?.version
    }

    private var highestApplied: MigrationVersion? {
        history.last?.version
    }

    /// The state of every version that has a file or a history row, in version order.
    public func statuses() -> [MigrationStatus] {
        var byVersion: [MigrationVersion: AppliedMigration] = [:]
        for row in history { byVersion[row.version] = row }
        var result: [MigrationStatus] = []
        var seen: Set<MigrationVersion> = []
        for migration in migrations {
            seen.insert(migration.version)
            let checksum = migration.checksum
            let state: MigrationStatus.State
            if let row = byVersion[migration.version] {
                if row.kind == .baseline {
                    state = .baseline
                } else if !row.isComplete {
                    // A non-transactional file that stopped may have been fixed since: `up`
                    // resumes it after its last statement that succeeded.
                    state = .partial
                } else {
                    state = row.checksum != checksum ? .edited : .applied
                }
            } else if let baseline, migration.version <= baseline {
                state = .baseline
            } else if let highest = highestApplied, migration.version < highest {
                state = .outOfOrder
            } else {
                state = .pending
            }
            result.append(MigrationStatus(version: migration.version, name: migration.name, state: state,
                                          fileName: migration.fileName, applied: byVersion[migration.version], checksum: checksum))
        }
        for row in history where !seen.contains(row.version) {
            result.append(MigrationStatus(version: row.version, name: row.name, state: row.kind == .baseline ? .baseline : .missing,
                                          fileName: nil, applied: row, checksum: nil))
        }
        return result.sorted { $0.version < $1.version }
    }

    /// What `up` runs, in order: partial migrations to resume first, then pending ones up to
    /// `target` (all when nil). Throws when an applied file was edited, when a pending file
    /// is out of order (unless allowed), or when `target` is unknown.
    public func upPlan(to target: MigrationVersion? = nil, allowOutOfOrder: Bool = false) throws(MigrationError) -> [Migration] {
        let statuses = statuses()
        if let target, !statuses.contains(where: { $0.version == target }) {
            throw .unknownVersion(target.text)
        }
        try refuseEdited(statuses)
        let outOfOrder = statuses.filter { $0.state == .outOfOrder && (target == nil || $0.version <= target!) }
        if !outOfOrder.isEmpty && !allowOutOfOrder, let highest = highestApplied {
            throw .outOfOrder(files: outOfOrder.compactMap(\.fileName), highestApplied: highest)
        }
        let runnable: Set<MigrationStatus.State> = allowOutOfOrder ? [.partial, .pending, .outOfOrder] : [.partial, .pending]
        let versions = Set(statuses.filter { runnable.contains($0.state) && (target == nil || $0.version <= target!) }.map(\.version))
        let chosen = migrations.filter { versions.contains($0.version) }
        // A half-done migration is finished before anything newer starts.
        return chosen.filter { m in statuses.contains { $0.version == m.version && $0.state == .partial } }
            + chosen.filter { m in !statuses.contains { $0.version == m.version && $0.state == .partial } }
    }

    /// What `down` reverts, newest first: the last `steps` applied migrations, or every one
    /// above `target`. Throws when one of them has no file or no down section, or was edited.
    public func downPlan(steps: Int? = nil, to target: MigrationVersion? = nil) throws(MigrationError) -> [(Migration, AppliedMigration)] {
        let applied = history.filter { $0.kind == .migration }
        let chosen: [AppliedMigration]
        if let target {
            guard target == MigrationVersion("0") || history.contains(where: { $0.version == target })
                    || migrations.contains(where: { $0.version == target }) else {
                throw .unknownVersion(target.text)
            }
            chosen = applied.filter { $0.version > target }.reversed()
        } else {
            chosen = Array(applied.reversed().prefix(steps ?? 1))
        }
        let statuses = statuses()
        return try chosen.map { (row) throws(MigrationError) in
            guard let migration = migrations.first(where: { $0.version == row.version }) else {
                throw .invalidFile(file: "\(row.version)_\(row.name).sql", line: nil,
                                   message: "migration \(row.version) is applied but its file is missing, so it cannot be reverted")
            }
            if let status = statuses.first(where: { $0.version == row.version }), status.state == .edited {
                throw .edited(file: migration.fileName, version: migration.version, recorded: row.checksum, current: migration.checksum)
            }
            guard migration.down != nil else { throw .noDownSection(file: migration.fileName) }
            return (migration, row)
        }
    }

    private func refuseEdited(_ statuses: [MigrationStatus]) throws(MigrationError) {
        if let edited = statuses.first(where: { $0.state == .edited }), let row = edited.applied, let checksum = edited.checksum {
            throw .edited(file: edited.fileName ?? edited.name, version: edited.version, recorded: row.checksum, current: checksum)
        }
    }
}
