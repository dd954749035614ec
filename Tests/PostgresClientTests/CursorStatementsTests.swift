import Testing
@testable import PostgresClient

/// The cursor planner without a server: the statements a cursor stream sends.
@Suite struct CursorStatementsTests {
    @Test func aCursorIsDeclaredOverTheQueryAndReadInBatchesOfItsSize() {
        let cursor = CursorStatements(number: 3, batchSize: 500)
        #expect(cursor.declare(#"SELECT "id" FROM "item" AS t WHERE t."name" = $1"#)
                == #"DECLARE pd_cursor_3 NO SCROLL CURSOR FOR SELECT "id" FROM "item" AS t WHERE t."name" = $1"#)
        #expect(cursor.fetch == "FETCH FORWARD 500 FROM pd_cursor_3")
        #expect(cursor.close == "CLOSE pd_cursor_3")
        #expect(!cursor.isLast(500))
        #expect(cursor.isLast(499))
        #expect(cursor.isLast(0))
    }

    @Test func aBatchSizeBelowOneFetchesOneRowAtATime() {
        let cursor = CursorStatements(number: 1, batchSize: 0)
        #expect(cursor.fetch == "FETCH FORWARD 1 FROM pd_cursor_1")
        #expect(CursorStatements(number: 1, batchSize: -5).batchSize == 1)
    }
}
