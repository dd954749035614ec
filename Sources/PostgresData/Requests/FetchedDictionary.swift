/// One result of a dictionary fetch: the fetched keys of one row (or group) and their values,
/// NULL values left out.
///
/// Use it as the result type of a ``FetchRequest`` with ``FetchRequestResultType/dictionary``
/// results when you fetch many rows: all the results of one fetch share one key set and one
/// contiguous store of values, so a result costs 16 bytes beside its values and no hashing
/// per row. Read it like a dictionary (`row["name"]`, `for (key, value) in row`), or turn it
/// into one with ``dictionary``. `FetchRequest<[String: AttributeValue]>` returns plain Swift
/// dictionaries instead (each its own hash table: about 400 bytes for four keys).
///
/// ```swift
/// var request = FetchRequest<FetchedDictionary>(entityName: "Item")
/// request.propertiesToFetch = ["done", .expression(.count("id", as: "items"))]
/// request.propertiesToGroupBy = ["done"]
/// for group in try context.fetch(request) {
///     print(group["done"] ?? .null, group["items"] ?? .null)
/// }
/// ```
///
/// Core Data equivalent: the `NSDictionary` results of `.dictionaryResultType`, which Core
/// Data also builds on one shared key set per fetch.
public struct FetchedDictionary: Sendable, Hashable, Collection, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// The keys and values of every result of one fetch; values row after row.
    final class Rows: Sendable {
        let keys: [String]
        let values: [AttributeValue]
        /// Each key's position in a row, when there are many keys; a few are compared in turn
        /// instead, which costs less than hashing the key asked for (a million rows read key
        /// by key hashed four million strings).
        private let positions: [String: Int]?

        /// Up to this many keys are found by comparison.
        private static let comparedKeys = 8

        init(keys: [String], values: [AttributeValue]) {
            self.keys = keys
            self.values = values
            positions = keys.count <= Self.comparedKeys ? nil
                : Dictionary(keys.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { first, _ in first })
        }

        /// The position of `key` in a row (its first, if fetched twice).
        @inline(__always)
        func position(of key: String) -> Int? {
            if let positions { return positions[key] }
            return keys.firstIndex(of: key)
        }

        /// The results, one per row of `values`.
        var results: [FetchedDictionary] {
            let rowCount = keys.isEmpty ? 0 : values.count / keys.count
            return (0..<rowCount).map { FetchedDictionary(rows: self, start: $0 * keys.count) }
        }
    }

    /// A position among the fetched keys; positions of NULL values are skipped.
    public typealias Index = Int

    private let rows: Rows
    private let start: Int

    init(rows: Rows, start: Int) {
        self.rows = rows
        self.start = start
    }

    /// A result holding the non-NULL entries of `dictionary`, keys in sorted order.
    public init(_ dictionary: [String: AttributeValue]) {
        let entries = dictionary.filter { !$0.value.isNull }.sorted { $0.key < $1.key }
        self.init(rows: Rows(keys: entries.map(\.key), values: entries.map(\.value)), start: 0)
    }

    /// A result holding the non-NULL entries of a literal (`["done": .boolean(true)]`).
    public init(dictionaryLiteral elements: (String, AttributeValue)...) {
        self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    /// The value of `key`, or nil when the value is NULL or the key was not fetched.
    public subscript(key: String) -> AttributeValue? {
        guard let position = rows.position(of: key) else { return nil }
        let value = rows.values[start + position]
        return value.isNull ? nil : value
    }

    /// The keys with a value (not NULL), in the order of ``FetchRequest/propertiesToFetch``.
    public var keys: [String] { map(\.key) }

    /// The entries as a Swift dictionary.
    public var dictionary: [String: AttributeValue] {
        Dictionary(uniqueKeysWithValues: map { ($0.key, $0.value) })
    }

    // MARK: Collection

    public var startIndex: Int { nextValued(from: 0) }

    public var endIndex: Int { rows.keys.count }

    public func index(after position: Int) -> Int { nextValued(from: position + 1) }

    public subscript(position: Int) -> (key: String, value: AttributeValue) {
        (rows.keys[position], rows.values[start + position])
    }

    private func nextValued(from position: Int) -> Int {
        var position = position
        while position < rows.keys.count, rows.values[start + position].isNull { position += 1 }
        return position
    }

    // MARK: Equality and description

    /// Equal when both hold the same keys with the same values, whatever their order.
    public static func == (lhs: FetchedDictionary, rhs: FetchedDictionary) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.allSatisfy { rhs[$0.key] == $0.value }
    }

    public func hash(into hasher: inout Hasher) {
        // Entries hashed apart and combined so that the order of keys does not count.
        var combined = 0
        for (key, value) in self {
            var entry = Hasher()
            entry.combine(key)
            entry.combine(value)
            combined ^= entry.finalize()
        }
        hasher.combine(count)
        hasher.combine(combined)
    }

    public var description: String { dictionary.description }
}
