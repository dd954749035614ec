@testable import PostgresData
import Testing

/// History stores keys as ranges of consecutive keys; they come back as they went.
@Suite struct HistoryRecordTests {
    @Test func keysBecomeRangesAndComeBack() {
        #expect(HistoryRecord.ranges(of: [1, 2, 3, 7, 9, 10]) == [1..<4, 7..<8, 9..<11])
        #expect(HistoryRecord.ranges(of: [10, 2, 9, 1, 2]) == [1..<3, 9..<11])
        #expect(HistoryRecord.ranges(of: []) == [])
        #expect(HistoryRecord.ranges(of: Array(1...100_000)) == [1..<100_001])
        #expect(HistoryRecord.keys(ofMultirange: "{[1,4),[7,8),[9,11)}") == [1, 2, 3, 7, 9, 10])
        #expect(HistoryRecord.keys(ofMultirange: "{}") == [])
        #expect(HistoryRecord.keys(ofMultirange: "{[-3,-1)}") == [-3, -2])
    }
}
