import Foundation
@testable import PostgresMigrations
import Testing

/// Reading migration files: names, sections, directives, statements and checksums.
struct MigrationFileTests {
    @Test func aFileHasAVersionANameAndItsSections() throws {
        let migration = try Migration(fileName: "0007_add_weight.sql", contents: """
            -- Adds a weight.
            -- migrate:lock-timeout 2s
            -- migrate:up
            ALTER TABLE items ADD COLUMN weight integer NOT NULL DEFAULT 0;

            -- migrate:down
            ALTER TABLE items DROP COLUMN weight;
            """)
        #expect(migration.version.text == "0007")
        #expect(migration.name == "add_weight")
        #expect(migration.isTransactional)
        #expect(migration.lockTimeout == "2s")
        #expect(migration.up.firstLine == 4)
        #expect(try migration.up.statements(file: "f").map(\.line) == [4])
        #expect(try migration.down?.statements(file: "f").map(\.line) == [7])
    }

    @Test func noTransactionIsADirectiveOrAnOptionOfTheUpLine() throws {
        let directive = try Migration(fileName: "1_a.sql", contents: "-- migrate:no-transaction\n-- migrate:up\nSELECT 1;")
        let dbmateStyle = try Migration(fileName: "2_b.sql", contents: "-- migrate:up transaction:false\nSELECT 1;")
        #expect(!directive.isTransactional)
        #expect(!dbmateStyle.isTransactional)
        #expect(directive.down == nil)
    }

    @Test(arguments: [
        ("create_items.sql", "-- migrate:up\nSELECT 1;", "the name must be <version>_<description>.sql"),
        ("0001_.sql", "-- migrate:up\nSELECT 1;", "no description"),
        ("0001_a.sql", "SELECT 1;", "SQL before '-- migrate:up'"),
        ("0001_a.sql", "-- just a comment", "no '-- migrate:up' line"),
        ("0001_a.sql", "-- migrate:down\nSELECT 1;", "'-- migrate:down' before '-- migrate:up'"),
        ("0001_a.sql", "-- migrate:up\n-- migrate:lock-timeout soon\nSELECT 1;", "needs a duration"),
        ("0001_a.sql", "-- migrate:up\n-- migrate:transactional\nSELECT 1;", "unknown directive"),
    ])
    func aMalformedFileIsRefusedWithWhatIsWrong(fileName: String, contents: String, expected: String) {
        #expect {
            try Migration(fileName: fileName, contents: contents)
        } throws: { error in
            "\(error)".contains(expected) && "\(error)".contains(fileName)
        }
    }

    @Test func statementsSplitOnlyAtSemicolonsOutsideQuotesCommentsAndBodies() throws {
        let sql = """
            CREATE FUNCTION f() RETURNS text LANGUAGE plpgsql AS $body$
            BEGIN
                RETURN 'a;b'; -- ; in a body
            END $body$;
            INSERT INTO t VALUES ('it''s; fine', E'back\\'slash;', "odd;name", $$x;y$$); /* a ; /* nested ; */ comment */
            CREATE FUNCTION g(a int) RETURNS int LANGUAGE sql
            BEGIN ATOMIC
                SELECT CASE WHEN a > 0 THEN 1 ELSE 0 END;
                SELECT a;
            END;
            SELECT $1
            """
        let statements = try SQLStatement.split(sql, firstLine: 10)
        #expect(statements.count == 4)
        #expect(statements.map(\.line) == [10, 14, 15, 20])
        #expect(statements[0].text.hasSuffix("END $body$"))
        #expect(statements[2].text.hasSuffix("END"))
        #expect(statements[3].text == "SELECT $1")
    }

    @Test(arguments: [
        ("SELECT 'open", "a string constant opened here is never closed", 3),
        ("SELECT $tag$ body", "the dollar-quoted string $tag$ opened here is never closed", 3),
        ("SELECT 1; /* open", "a /* comment is never closed", 3),
        ("SELECT \"open", "a quoted identifier opened here is never closed", 3),
    ])
    func anUnterminatedQuoteNamesItsLine(sql: String, message: String, line: Int) {
        #expect(throws: SQLLexerError(message: message, line: line)) { try SQLStatement.split(sql, firstLine: 3) }
    }

    @Test func sha256MatchesTheStandardVectors() {
        #expect(SHA256.hexDigest(of: Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest(of: [UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hexDigest(of: Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hexDigest(of: [UInt8](repeating: 0x61, count: 1_000)) == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }

    @Test func checksumsIgnoreLineEndingsAndTrailingWhitespaceOnly() {
        let original = MigrationChecksum(of: "CREATE TABLE a (x int);\nSELECT 1;\n")
        #expect(original.text.hasPrefix("v1:") && original.version == 1)
        #expect(MigrationChecksum(of: "\r\nCREATE TABLE a (x int);  \r\nSELECT 1;\t\r\n\r\n") == original)
        #expect(MigrationChecksum(of: "CREATE TABLE a (x bigint);\nSELECT 1;\n") != original)
        #expect(MigrationChecksum(of: "CREATE TABLE a (x int);\n  SELECT 1;\n") != original)
    }

    @Test func versionsCompareAsNumbers() throws {
        let versions = ["10", "0002", "9", "20261121093000", "0001"].compactMap(MigrationVersion.init).sorted()
        #expect(versions.map(\.text) == ["0001", "0002", "9", "10", "20261121093000"])
        #expect(MigrationVersion("0007") == MigrationVersion("7"))
        #expect(MigrationVersion("7a") == nil)
    }

    @Test func newPicksTheNextNumberOrATimestamp() throws {
        let sequential = try MigrationDirectory(migrations: [
            try Migration(fileName: "0009_a.sql", contents: "-- migrate:up\n"),
        ])
        #expect(try sequential.newFileName(for: "Add items weight!") == "0010_add_items_weight.sql")
        let stamped = try MigrationDirectory(migrations: [
            try Migration(fileName: "20261121093000_a.sql", contents: "-- migrate:up\n"),
        ])
        #expect(stamped.style == .timestamp)
        let now = try #require(ISO8601DateFormatter().date(from: "2026-11-22T08:30:05Z"))
        #expect(try stamped.newFileName(for: "b", now: now) == "20261122083005_b.sql")
        #expect(try MigrationDirectory(migrations: []).newFileName(for: "first") == "0001_first.sql")
    }

    @Test func twoFilesWithOneVersionAreRefused() throws {
        #expect {
            try MigrationDirectory(migrations: [
                try Migration(fileName: "0001_a.sql", contents: "-- migrate:up\n"),
                try Migration(fileName: "1_b.sql", contents: "-- migrate:up\n"),
            ])
        } throws: { "\($0)".contains("0001_a.sql and 1_b.sql") }
    }
}
