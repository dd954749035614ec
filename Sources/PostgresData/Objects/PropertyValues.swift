/// The values of one object's properties, one per property of its entity, indexed from 0.
///
/// A value type with copy-on-write: either an array of its own, or a view of one row among
/// the rows a fetch decoded into one array (``DecodedRows``), so that a million fetched
/// objects cost a few thousand arrays, not a million. The first change to a view copies its
/// row out (``array``); the other rows are never copied.
struct PropertyValues: RandomAccessCollection, MutableCollection, ExpressibleByArrayLiteral, Equatable, Sendable {
    private var base: [AttributeValue]
    private var start: Int
    let count: Int

    init(_ values: [AttributeValue]) {
        base = values
        start = 0
        count = values.count
    }

    init(arrayLiteral values: AttributeValue...) {
        self.init(values)
    }

    /// The `count` values from `start` of `rows`.
    init(row start: Int, count: Int, of rows: [AttributeValue]) {
        base = rows
        self.start = start
        self.count = count
    }

    /// The values as an array: free for values with an array of their own, a copy of the
    /// row for a view.
    var array: [AttributeValue] {
        start == 0 && count == base.count ? base : Array(base[start..<start + count])
    }

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(index: Int) -> AttributeValue {
        get {
            precondition(index >= 0 && index < count, "property index \(index) out of range 0..<\(count)")
            return base[start + index]
        }
        set {
            precondition(index >= 0 && index < count, "property index \(index) out of range 0..<\(count)")
            makeOwnArray()
            base[index] = newValue
        }
    }

    /// Calls `body` with the values' storage, made an array of their own first.
    mutating func withUnsafeMutableBufferPointer<Result>(_ body: (inout UnsafeMutableBufferPointer<AttributeValue>) throws -> Result) rethrows -> Result {
        makeOwnArray()
        return try base.withUnsafeMutableBufferPointer(body)
    }

    /// Copies a view's row out of the shared rows, before its first change.
    private mutating func makeOwnArray() {
        guard start != 0 || count != base.count else { return }
        base = array
        start = 0
    }

    static func == (lhs: PropertyValues, rhs: PropertyValues) -> Bool {
        lhs.elementsEqual(rhs)
    }
}
