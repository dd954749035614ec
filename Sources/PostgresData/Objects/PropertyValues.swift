/// The values of one object's properties, one per property of its entity, indexed from 0.
///
/// A value type with copy-on-write over one array. A fetched object does not make one until
/// it needs it: it reads its values from its snapshot's row of ``DecodedRows``.
struct PropertyValues: RandomAccessCollection, MutableCollection, ExpressibleByArrayLiteral, Equatable, Sendable {
    /// The values as an array.
    private(set) var array: [AttributeValue]

    init(_ values: [AttributeValue]) {
        array = values
    }

    init(arrayLiteral values: AttributeValue...) {
        self.init(values)
    }

    var startIndex: Int { 0 }
    var endIndex: Int { array.count }
    var count: Int { array.count }

    subscript(index: Int) -> AttributeValue {
        get {
            precondition(index >= 0 && index < array.count, "property index \(index) out of range 0..<\(array.count)")
            return array[index]
        }
        set {
            precondition(index >= 0 && index < array.count, "property index \(index) out of range 0..<\(array.count)")
            array[index] = newValue
        }
    }

    /// Calls `body` with the values' storage.
    mutating func withUnsafeMutableBufferPointer<Result>(_ body: (inout UnsafeMutableBufferPointer<AttributeValue>) throws -> Result) rethrows -> Result {
        try array.withUnsafeMutableBufferPointer(body)
    }

    static func == (lhs: PropertyValues, rhs: PropertyValues) -> Bool {
        lhs.elementsEqual(rhs)
    }
}
