/// Passes over many objects without reference counting each one: an object read out of an
/// array or a change set is retained and released around every use, two atomic operations
/// per object, where the collection's own reference already keeps it alive.
extension Array where Element == ManagedObject {
    /// Calls `body` with each object, borrowed: the array's objects when the call began,
    /// which its own reference to the array's storage keeps alive whatever `body` does.
    func forEachBorrowed(_ body: (ManagedObject) throws -> Void) rethrows {
        let objects = self
        try objects.withUnsafeBufferPointer { objects in
            try ManagedObject.forEachBorrowed(in: UnsafeRawBufferPointer(objects)) { _, object in try body(object) }
        }
    }
}

extension Array where Element == ManagedObject? {
    /// Calls `body` with each object (nil slots skipped), borrowed, as the array of objects
    /// does (a change set's own list).
    func forEachBorrowed(_ body: (ManagedObject) throws -> Void) rethrows {
        let objects = self
        try objects.withUnsafeBufferPointer { objects in
            try ManagedObject.forEachBorrowed(in: UnsafeRawBufferPointer(objects)) { _, object in try body(object) }
        }
    }
}

extension ManagedObject {
    /// Calls `body` with the position and the object of each word of `references` (a buffer
    /// of `ManagedObject` or `ManagedObject?`; zero, nil, is skipped), the object borrowed:
    /// the caller keeps the buffer and its objects alive throughout.
    static func forEachBorrowed(in references: UnsafeRawBufferPointer, _ body: (Int, ManagedObject) throws -> Void) rethrows {
        let stride = MemoryLayout<UnsafeRawPointer?>.stride
        for position in 0..<references.count / stride {
            guard let address = references.load(fromByteOffset: position * stride, as: UnsafeRawPointer?.self) else { continue }
            try Unmanaged<ManagedObject>.fromOpaque(address)._withUnsafeGuaranteedRef { try body(position, $0) }
        }
    }
}
