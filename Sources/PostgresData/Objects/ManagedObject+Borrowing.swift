/// Passes over many objects without reference counting each one: an object read out of an
/// array or a change set is retained and released around every use, two atomic operations
/// per object, where the collection's own reference already keeps it alive.
extension Array where Element == ManagedObject {
    /// Calls `body` with each object, borrowed: the array's objects when the call began,
    /// which its own reference to the array's storage keeps alive whatever `body` does.
    func forEachBorrowed(_ body: (ManagedObject) throws -> Void) rethrows {
        let objects = self
        try objects.withUnsafeBufferPointer { objects in
            try ManagedObject.forEachBorrowed(in: UnsafeRawBufferPointer(objects), body)
        }
    }
}

extension ManagedObject {
    /// Calls `body` with each object referenced by the words of `references` (a buffer of
    /// `ManagedObject` or `ManagedObject?`, zero for nil), borrowed.
    static func forEachBorrowed(in references: UnsafeRawBufferPointer, _ body: (ManagedObject) throws -> Void) rethrows {
        let stride = MemoryLayout<UnsafeRawPointer?>.stride
        for offset in Swift.stride(from: 0, to: references.count, by: stride) {
            guard let address = references.load(fromByteOffset: offset, as: UnsafeRawPointer?.self) else { continue }
            try Unmanaged<ManagedObject>.fromOpaque(address)._withUnsafeGuaranteedRef(body)
        }
    }
}
