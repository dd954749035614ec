/// The row-cache reading under which the faults of one batch of a large or asynchronous
/// fetch keep their rows (the batch's ``DecodedRows``): it holds the fetch's ``RowCache/Reader``
/// while any of those faults is still waiting, and lets it go once the last one has fired
/// or let go of its row, so that the cache stops keeping changed rows for it.
///
/// A fault keeps a row of its batch's decoded rows from registration on, and firing it only
/// flips the object's state: no reference is taken or given up for each of a million faults
/// fired after a large fetch. The faults' snapshots hold the decoded rows, which hold this;
/// the count of waiting faults tells when the reader may go.
///
/// Confined to the context that registered the batch, as its faults are: its count changes
/// only on that context's queue (or in its `deinit`). A count that misses a fault keeps the
/// reader until the batch's rows are freed, as before it had one; a reading that has let its
/// reader go sends any fault that still waits on it to the row cache, which reads the row
/// again (``RowCache/FaultRow/changed``).
final class KeptReading: @unchecked Sendable {
    /// The reader's generation and start (``RowCache/Reader``), kept here so that checking
    /// a fault's row takes no reference to the reader.
    let generation: UInt64
    let stamp: UInt32
    private var reader: RowCache.Reader?
    private var waiting = 0

    init(_ reader: RowCache.Reader) {
        self.reader = reader
        generation = reader.generation
        stamp = reader.stamp
    }

    /// True while the reader is held: faults waiting on it may take their own rows.
    @inline(__always)
    var isLive: Bool { reader != nil }

    /// Counts a fault that now waits with one of the batch's rows.
    @inline(__always)
    func enter() { waiting &+= 1 }

    /// Counts off a fault that fired or let go of its row; the last lets the reader go.
    @inline(__always)
    func leave() {
        waiting &-= 1
        if waiting <= 0 {
            waiting = 0
            reader = nil
        }
    }
}
