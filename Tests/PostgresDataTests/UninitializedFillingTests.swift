@testable import PostgresData
import Testing

/// Arrays filled in place: no capacity never reaches the standard initializer, which would
/// write into the empty array every thread shares.
@Suite struct UninitializedFillingTests {
    @Test func noCapacityGivesAnEmptyArrayWithoutCallingTheBody() {
        var called = false
        let empty = [Int64](uninitializedCount: 0) { _, _ in called = true }
        #expect(empty.isEmpty && !called)
        let filled = [Int64](uninitializedCount: 3) { buffer, count in
            for index in 0..<3 { buffer[index] = Int64(index) * 10 }
            count = 3
        }
        #expect(filled == [0, 10, 20])
    }
}
