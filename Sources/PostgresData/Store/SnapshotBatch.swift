/// Fetched rows as a context registers them: a key and a snapshot per row.
protocol FetchedRows {
    var count: Int { get }
    func key(at index: Int) -> Int64
    func snapshot(at index: Int) -> RowSnapshot
}

extension Array: FetchedRows where Element == (Int64, RowSnapshot) {
    @inline(__always) func key(at index: Int) -> Int64 { self[index].0 }
    @inline(__always) func snapshot(at index: Int) -> RowSnapshot { self[index].1 }
}

/// Rows of one result decoded together (``SnapshotDecoder/batch(of:rows:)``): keys and
/// versions in one array, values in ``DecodedRows`` of ``SnapshotDecoder/chunkRows`` rows
/// each. A row's ``RowSnapshot`` is made when it is registered, so a batch counts one
/// reference per chunk, not one per row (two reference-count changes fewer per row, and no
/// array of snapshots to make and free).
struct SnapshotBatch: FetchedRows, Sendable {
    private enum Storage {
        case chunked(keys: [Int64], versions: [UInt32], chunks: [DecodedRows])
        /// Rows decoded one by one (a result in text format, say).
        case rows([(Int64, RowSnapshot)])
    }

    private let storage: Storage
    /// Faults for the batch's rows, when the task that decoded it made them
    /// (``ObjectsMadeAhead``).
    var madeAhead: ObjectsMadeAhead?

    init(keys: [Int64], versions: [UInt32], chunks: [DecodedRows]) {
        storage = .chunked(keys: keys, versions: versions, chunks: chunks)
    }

    init(rows: [(Int64, RowSnapshot)]) {
        storage = .rows(rows)
    }

    var count: Int {
        switch storage {
        case .chunked(let keys, _, _): keys.count
        case .rows(let rows): rows.count
        }
    }

    @inline(__always)
    func key(at index: Int) -> Int64 {
        switch storage {
        case .chunked(let keys, _, _): keys[index]
        case .rows(let rows): rows[index].0
        }
    }

    @inline(__always)
    func snapshot(at index: Int) -> RowSnapshot {
        switch storage {
        case .chunked(_, let versions, let chunks):
            RowSnapshot(row: index % SnapshotDecoder.chunkRows, of: chunks[index / SnapshotDecoder.chunkRows],
                        version: versions[index])
        case .rows(let rows): rows[index].1
        }
    }

    /// The keys, versions and chunks of values of a batch decoded in chunks; nil for rows
    /// decoded one by one.
    var chunked: (keys: [Int64], versions: [UInt32], chunks: [DecodedRows])? {
        if case .chunked(let keys, let versions, let chunks) = storage { (keys, versions, chunks) } else { nil }
    }

    /// Every row with its key and snapshot (rows decoded one by one: the array they came in).
    var rows: [(Int64, RowSnapshot)] {
        switch storage {
        case .chunked: (0..<count).map { (key(at: $0), snapshot(at: $0)) }
        case .rows(let rows): rows
        }
    }
}
