extension Array {
    /// `init(unsafeUninitializedCapacity:initializingWith:)`, except that no capacity gives
    /// an empty array without calling `body`: the standard one writes its count into the
    /// empty array every thread shares, a race the thread sanitizer reports.
    @inline(__always)
    init(uninitializedCount capacity: Int, _ body: (inout UnsafeMutableBufferPointer<Element>, inout Int) throws -> Void) rethrows {
        guard capacity > 0 else {
            self = []
            return
        }
        try self.init(unsafeUninitializedCapacity: capacity, initializingWith: body)
    }
}
