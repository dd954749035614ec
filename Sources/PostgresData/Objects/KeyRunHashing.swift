/// Hashing for hash tables keyed by primary keys that mostly come in runs (bigserial): the
/// contexts' identity maps and the coordinator's row cache, which hold up to millions of rows.
///
/// Runs of 8 consecutive keys hash to 8 consecutive buckets, so that registering a fetch's
/// rows, and growing the table, walk memory in order instead of missing the cache at every
/// row; the runs themselves are scattered by a strong mix of the run number, a salt (the
/// entity, the kind of ID) and the table's seed. (Runs of 64 were slower: long linear-probing
/// clusters at a load of 0.75.)
enum KeyRunHashing {
    @inline(__always)
    static func hashValue(of key: Int64, salt: UInt64, seed: Int) -> Int {
        var run = UInt64(bitPattern: key >> 3) ^ UInt64(UInt(bitPattern: seed)) ^ salt
        // splitmix64's finaliser
        run = (run ^ (run >> 30)) &* 0xBF58_476D_1CE4_E5B9
        run = (run ^ (run >> 27)) &* 0x94D0_49BB_1331_11EB
        run ^= run >> 31
        return Int(bitPattern: UInt(truncatingIfNeeded: (run << 3) | UInt64(key & 7)))
    }
}
