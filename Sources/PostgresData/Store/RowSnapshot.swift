/// The values of one row as the store last read or wrote them, with the row version
/// (`xmin`) they belong to. Immutable; its values are shared (copy on write) by the row
/// cache, every context holding the row, and the objects filled from it. A fetched row is a
/// row of ``DecodedRows`` (its values in columns shared with a few hundred other rows); a
/// saved one has an array of its own.
///
/// A row fetched for a fault of a large or asynchronous fetch is a row of its batch (``EncodedRows``,
/// decoded off the context as the batch arrived), until the fault fires and takes the
/// decoded row (after checking that the row cache holds no newer one). Objects always hold
/// decoded snapshots (``decoded()``).
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

    /// For a row kept encoded, the generation of the fetch it came in (``RowCache/Reader``).
    /// The reader a large or asynchronous fetch's fault kept its row under.
    var reader: RowCache.Reader? {
        if case .encoded(let rows) = storage { rows.reader } else { nil }
    }

    /// The same row with its values decoded (shared with the rows decoded with it); nil when
    /// a row kept encoded does not decode.
    var decodedIfPossible: RowSnapshot? {
        if case .encoded(let rows) = storage { rows.decodedSnapshot(at: Int(row), version: version) } else { self }
    }

    /// For a row kept encoded whose reader `isCurrent` accepts (no newer row can exist), the
    /// row decoded; nil otherwise. Called on a fault's stored row, it reads the row in place:
    /// a million faults fire after a large asynchronous fetch.
    @inline(__always)
    func decodedKeptRow(if isCurrent: (RowCache.Reader) -> Bool) -> RowSnapshot? {
        guard let rows = encodedRows else { return nil }
        return rows._withUnsafeGuaranteedRef { rows in
            isCurrent(rows.reader) ? rows.decodedSnapshot(at: Int(row), version: version) : nil
        }
    }

    /// The batch of a row kept encoded, not retained (the snapshot holds it): binding the
    /// enum's payload took a retain and a release of it for each of a million faults fired.
    @inline(__always)
    private var encodedRows: Unmanaged<EncodedRows>? {
        guard case .encoded(let rows) = storage else { return nil }
        return .passUnretained(rows)
    }

    /// The same row with its values decoded. Faults decode their rows with
    /// ``decodedIfPossible`` first, so a row that does not decode is never left here.
    func decoded() -> RowSnapshot {
        decodedIfPossible ?? self
    }
}
