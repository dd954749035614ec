/// The values of one row as the store last read or wrote them, with the row version
/// (`xmin`) they belong to. Immutable; its values are shared (copy on write) by the row
/// cache, every context holding the row, and the objects filled from it. A fetched row is a
/// row of ``DecodedRows`` (its values in columns shared with a few hundred other rows); a
/// saved one has an array of its own.
///
/// A row fetched for a fault of a large or asynchronous fetch is a row of its batch's decoded
/// rows, which hold the reading it waits under (``KeptReading``): firing the fault (after
/// checking that the row cache holds no newer row) changes no reference. When a chunk of the
/// batch did not decode, its faults keep a row of the batch (``EncodedRows``), decoded when
/// they fire. Objects always hold decoded snapshots (``decoded()``).
struct RowSnapshot: Sendable {
    // One reference, the enum's tag in its spare bits: 16 bytes with the row number and the
    // version, in every object and row-cache entry (a million of each for a large fetch).
    private enum Storage {
        case decoded([AttributeValue])
        case shared(DecodedRows)
        case encoded(EncodedRows)
    }

    private let storage: Storage
    private let row: Int32
    /// The transaction ID that wrote the row: a save's `UPDATE … WHERE xmin = version`
    /// detects any write since.
    let version: UInt32

    init(values: [AttributeValue], version: UInt32) {
        self.storage = .decoded(values)
        self.row = 0
        self.version = version
    }

    init(values: PropertyValues, version: UInt32) {
        self.init(values: values.array, version: version)
    }

    init(row: Int, of rows: DecodedRows, version: UInt32) {
        self.storage = .shared(rows)
        self.row = Int32(row)
        self.version = version
    }

    init(row: Int, of rows: EncodedRows, version: UInt32) {
        self.storage = .encoded(rows)
        self.row = Int32(row)
        self.version = version
    }

    /// One value per property of the entity (relationships loaded on demand hold `.null`);
    /// an encoded row is decoded on every call: keep ``decoded()`` instead.
    var values: PropertyValues {
        switch storage {
        case .decoded(let values): PropertyValues(values)
        case .shared(let rows): rows.values(at: Int(row))
        case .encoded(let rows): rows.values(at: Int(row))
        }
    }

    /// The value of property `index`.
    @inline(__always)
    func value(at index: Int) -> AttributeValue {
        switch storage {
        case .decoded(let values): values[index]
        case .shared(let rows): rows.value(row: Int(row), property: index)
        case .encoded(let rows): rows.values(at: Int(row))[index]
        }
    }

    /// Property `index` as `Value`, read from the column of a row of ``DecodedRows`` without an
    /// ``AttributeValue`` made; nil for other rows, other kinds of column and NULL.
    @inline(__always)
    func typedValue<Value: ColumnReadable>(_ type: Value.Type, at index: Int) -> Value? {
        guard case .shared(let rows) = storage else { return nil }
        return rows.typedValue(type, row: Int(row), property: index)
    }

    /// True for a row of ``DecodedRows``: an object filled with it reads its values here
    /// until it changes one.
    var isShared: Bool {
        if case .shared = storage { true } else { false }
    }

    var isEncoded: Bool {
        if case .encoded = storage { true } else { false }
    }

    /// True for the row a fault of a large or asynchronous fetch keeps until it fires: a row
    /// kept encoded, or a row of decoded rows that hold the reading their faults wait under
    /// (``KeptReading``).
    var isKept: Bool {
        if encodedRows != nil { return true }
        return sharedRows?._withUnsafeGuaranteedRef { $0.kept != nil } ?? false
    }

    /// The generation and start of the reader a kept row was fetched by (``RowCache/Reader``);
    /// nil for other rows, and for a row whose reading let its reader go (``hasLapsedReading``).
    var readingMark: (generation: UInt64, stamp: UInt32)? {
        if let rows = encodedRows { return rows._withUnsafeGuaranteedRef { ($0.reader.generation, $0.reader.stamp) } }
        return sharedRows?._withUnsafeGuaranteedRef { rows in
            rows.kept?._withUnsafeGuaranteedRef { kept in kept.isLive ? (kept.generation, kept.stamp) : nil }
        }
    }

    /// True for a kept row whose reading no longer holds its reader: the row cache kept no
    /// rows changed since for it, so the row must be read again.
    var hasLapsedReading: Bool {
        sharedRows?._withUnsafeGuaranteedRef { rows in rows.kept?._withUnsafeGuaranteedRef { !$0.isLive } } ?? false
    }

    /// Counts a fault that now keeps this row in its reading (``KeptReading/enter()``); false
    /// when the row has none.
    @inline(__always)
    func enterKeptReading() -> Bool {
        guard let rows = sharedRows else { return false }
        return rows._withUnsafeGuaranteedRef { rows in
            guard let kept = rows.kept else { return false }
            kept._withUnsafeGuaranteedRef { $0.enter() }
            return true
        }
    }

    /// Counts off a fault that kept this row in its reading (``KeptReading/leave()``).
    @inline(__always)
    func leaveKeptReading() {
        sharedRows?._withUnsafeGuaranteedRef { rows in rows.kept?._withUnsafeGuaranteedRef { $0.leave() } }
    }

    /// For a kept row of decoded rows whose reading `isCurrent` accepts (given the reader's
    /// generation and start: no newer row can exist), counts the fault off its reading and
    /// returns true: the fault may fill with the row as it is. False otherwise.
    @inline(__always)
    func leavesKeptReading(ifCurrent isCurrent: (UInt64, UInt32) -> Bool) -> Bool {
        guard let rows = sharedRows else { return false }
        return rows._withUnsafeGuaranteedRef { rows in
            rows.kept?._withUnsafeGuaranteedRef { kept in
                guard kept.isLive, isCurrent(kept.generation, kept.stamp) else { return false }
                kept.leave()
                return true
            } ?? false
        }
    }

    /// The same row with its values decoded (shared with the rows decoded with it); nil when
    /// a row kept encoded does not decode.
    var decodedIfPossible: RowSnapshot? {
        if case .encoded(let rows) = storage { rows.decodedSnapshot(at: Int(row), version: version) } else { self }
    }

    /// For a row kept encoded (its batch did not decode whole) whose reader `isCurrent`
    /// accepts (given its generation and start: no newer row can exist), the row decoded;
    /// nil otherwise.
    @inline(__always)
    func decodedKeptRow(if isCurrent: (UInt64, UInt32) -> Bool) -> RowSnapshot? {
        guard let rows = encodedRows else { return nil }
        return rows._withUnsafeGuaranteedRef { rows in
            isCurrent(rows.reader.generation, rows.reader.stamp) ? rows.decodedSnapshot(at: Int(row), version: version) : nil
        }
    }

    /// The batch of a row kept encoded, not retained (the snapshot holds it): binding the
    /// enum's payload took a retain and a release of it for each of a million faults fired.
    @inline(__always)
    private var encodedRows: Unmanaged<EncodedRows>? {
        guard case .encoded(let rows) = storage else { return nil }
        return .passUnretained(rows)
    }

    /// The decoded rows of a row of them, not retained (see ``encodedRows``).
    @inline(__always)
    private var sharedRows: Unmanaged<DecodedRows>? {
        guard case .shared(let rows) = storage else { return nil }
        return .passUnretained(rows)
    }

    /// The same row with its values decoded. Faults decode their rows with
    /// ``decodedIfPossible`` first, so a row that does not decode is never left here.
    func decoded() -> RowSnapshot {
        decodedIfPossible ?? self
    }
}
