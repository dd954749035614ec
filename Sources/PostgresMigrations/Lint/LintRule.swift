/// One check of ``MigrationLinter``: its identifier, how bad a finding is, and what the
/// documentation says about it (`postgres-data lint --explain <id>` prints the same).
///
/// Safety rules run by default; style rules (``Level-swift.enum/style``) only when asked
/// for (`lint --style`). Each rule has a documentation article named after its identifier.
public struct LintRule: Sendable, Hashable, Identifiable {
    /// Whether a rule is about safety (always on) or about schema style (opt-in).
    public enum Level: String, Sendable, Hashable, Codable {
        /// Locks, rewrites, failures and breaking changes.
        case safety
        /// Types and names that age badly; reported only with `lint --style`.
        case style
    }

    /// The identifier findings carry and `-- lint:ignore` names (`set-not-null`).
    public let id: String
    /// The severity of its findings (a safety error on a small live table is lowered to a warning).
    public let severity: LintFinding.Severity
    /// Safety or style.
    public let level: Level
    /// One line saying what the rule finds.
    public let title: String
    /// The lock the statement takes, when that is the hazard.
    public let lock: String?
    /// Why it is dangerous.
    public let why: String
    /// The safe way.
    public let fix: String
    /// A statement the rule reports.
    public let reported: String
    /// The safe form, not reported.
    public let safe: String
    /// True when the harm grows with the table: with live sizes, a finding on a table under
    /// ``MigrationLinter/smallTableBytes`` is lowered to a warning.
    public let growsWithTable: Bool

    /// The documentation page's path in the built DocC archive.
    public var documentationPath: String { "/documentation/postgresmigrations/\(id)" }

    /// The rule called `id`, if there is one.
    public static func named(_ id: String) -> LintRule? { all.first { $0.id == id } }
}

extension LintRule {
    private init(_ id: String, _ severity: LintFinding.Severity, _ level: Level = .safety, title: String, lock: String? = nil,
                 why: String, fix: String, reported: String, safe: String, growsWithTable: Bool = false) {
        self.id = id
        self.severity = severity
        self.level = level
        self.title = title
        self.lock = lock
        self.why = why
        self.fix = fix
        self.reported = reported
        self.safe = safe
        self.growsWithTable = growsWithTable
    }

    /// Every rule, safety first, in the order the documentation lists them.
    public static let all: [LintRule] = [
        LintRule("index-without-concurrently", .error, title: "CREATE INDEX on an existing table without CONCURRENTLY", lock: "SHARE",
                 why: "A plain CREATE INDEX blocks every INSERT, UPDATE and DELETE on the table until the whole index is built.",
                 fix: "Build it with CREATE INDEX CONCURRENTLY IF NOT EXISTS in a file of its own marked `-- migrate:no-transaction`; the runner drops an index a failed build leaves invalid.",
                 reported: "CREATE INDEX items_name_idx ON items (name);",
                 safe: "-- migrate:no-transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS items_name_idx ON items (name);", growsWithTable: true),
        LintRule("drop-index-without-concurrently", .error, title: "DROP INDEX without CONCURRENTLY", lock: "ACCESS EXCLUSIVE",
                 why: "A plain DROP INDEX locks the index's table against reads and writes; it waits for every running query on the table first, and everything queues behind it.",
                 fix: "DROP INDEX CONCURRENTLY IF EXISTS, in a `-- migrate:no-transaction` file.",
                 reported: "DROP INDEX items_name_idx;", safe: "-- migrate:no-transaction\nDROP INDEX CONCURRENTLY IF EXISTS items_name_idx;"),
        LintRule("reindex-without-concurrently", .error, title: "REINDEX without CONCURRENTLY", lock: "SHARE (ACCESS EXCLUSIVE on the index)",
                 why: "A plain REINDEX blocks writes to the table and reads that use the index for as long as the rebuild takes.",
                 fix: "REINDEX INDEX CONCURRENTLY (PostgreSQL 12 and later), in a `-- migrate:no-transaction` file.",
                 reported: "REINDEX INDEX items_name_idx;", safe: "-- migrate:no-transaction\nREINDEX INDEX CONCURRENTLY items_name_idx;", growsWithTable: true),
        LintRule("detach-partition-without-concurrently", .error, title: "DETACH PARTITION without CONCURRENTLY", lock: "ACCESS EXCLUSIVE",
                 why: "Detaching a partition plainly locks the whole partitioned table against reads and writes.",
                 fix: "ALTER TABLE … DETACH PARTITION … CONCURRENTLY (PostgreSQL 14 and later), in a `-- migrate:no-transaction` file.",
                 reported: "ALTER TABLE events DETACH PARTITION events_2025;",
                 safe: "-- migrate:no-transaction\nALTER TABLE events DETACH PARTITION events_2025 CONCURRENTLY;"),
        LintRule("concurrently-in-transaction", .error, title: "A CONCURRENTLY statement in a transactional file",
                 why: "CREATE INDEX, DROP INDEX, REINDEX and DETACH PARTITION … CONCURRENTLY cannot run inside a transaction block: the migration fails.",
                 fix: "Add `-- migrate:no-transaction` to the file and keep the statement alone in it.",
                 reported: "CREATE INDEX CONCURRENTLY items_name_idx ON items (name);",
                 safe: "-- migrate:no-transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS items_name_idx ON items (name);"),
        LintRule("add-column-not-null-without-default", .error, title: "ADD COLUMN … NOT NULL without a DEFAULT",
                 why: "The statement fails as soon as the table has a row: the new column would be NULL in it.",
                 fix: "Give the column a constant DEFAULT (free since PostgreSQL 11), or add it nullable, backfill it, then set NOT NULL through a validated CHECK.",
                 reported: "ALTER TABLE items ADD COLUMN rank integer NOT NULL;", safe: "ALTER TABLE items ADD COLUMN rank integer NOT NULL DEFAULT 0;"),
        LintRule("add-column-rewrite", .error, title: "ADD COLUMN with a volatile default or a stored generated expression", lock: "ACCESS EXCLUSIVE",
                 why: "A default that differs per row (random(), clock_timestamp(), gen_random_uuid(), nextval()) or a STORED generated column makes PostgreSQL rewrite the whole table, locked against reads and writes.",
                 fix: "Add the column without the default, backfill it in batches, then SET DEFAULT for new rows.",
                 reported: "ALTER TABLE items ADD COLUMN token uuid DEFAULT gen_random_uuid();",
                 safe: "ALTER TABLE items ADD COLUMN token uuid;\nALTER TABLE items ALTER COLUMN token SET DEFAULT gen_random_uuid();", growsWithTable: true),
        LintRule("add-column-serial", .error, title: "ADD COLUMN of a serial type to an existing table", lock: "ACCESS EXCLUSIVE",
                 why: "serial, bigserial and smallserial have a nextval() default: every existing row gets a value, so the table is rewritten while locked.",
                 fix: "Add a plain bigint column, backfill it in batches from a sequence, then attach the sequence as its default (or use an identity column on a new table).",
                 reported: "ALTER TABLE items ADD COLUMN number bigserial;", safe: "ALTER TABLE items ADD COLUMN number bigint;", growsWithTable: true),
        LintRule("add-column-identity", .error, title: "ADD COLUMN … GENERATED AS IDENTITY to an existing table", lock: "ACCESS EXCLUSIVE",
                 why: "An identity column fills every existing row from its sequence: the table is rewritten while locked against reads and writes.",
                 fix: "Add a plain bigint column, backfill it in batches, then ALTER COLUMN … ADD GENERATED BY DEFAULT AS IDENTITY (which does not rewrite) with the sequence started above the highest value.",
                 reported: "ALTER TABLE items ADD COLUMN number bigint GENERATED BY DEFAULT AS IDENTITY;",
                 safe: "ALTER TABLE items ADD COLUMN number bigint;", growsWithTable: true),
        LintRule("add-column-unique", .error, title: "ADD COLUMN … UNIQUE or PRIMARY KEY", lock: "ACCESS EXCLUSIVE",
                 why: "The unique index is built while the table is locked against reads and writes.",
                 fix: "Add the column plainly, CREATE UNIQUE INDEX CONCURRENTLY in a no-transaction file, then ADD CONSTRAINT … UNIQUE USING INDEX.",
                 reported: "ALTER TABLE items ADD COLUMN code text UNIQUE;", safe: "ALTER TABLE items ADD COLUMN code text;", growsWithTable: true),
        LintRule("add-column-references", .error, title: "ADD COLUMN … REFERENCES", lock: "SHARE ROW EXCLUSIVE on both tables",
                 why: "Adding a foreign key takes a lock that blocks writes to the table and to the referenced table; with other clauses or defaults it also checks every row while holding it.",
                 fix: "Add the column without REFERENCES, then ADD CONSTRAINT … FOREIGN KEY … NOT VALID and VALIDATE CONSTRAINT it in a later migration.",
                 reported: "ALTER TABLE items ADD COLUMN list_id bigint REFERENCES lists (id);",
                 safe: "ALTER TABLE items ADD COLUMN list_id bigint;\nALTER TABLE items ADD CONSTRAINT items_list_id_fkey FOREIGN KEY (list_id) REFERENCES lists (id) NOT VALID;"),
        LintRule("column-type-change", .error, title: "ALTER COLUMN … TYPE", lock: "ACCESS EXCLUSIVE",
                 why: "Changing a column's type rewrites the table and rebuilds its indexes while it is locked against reads and writes (unless the types are binary-compatible, such as varchar(n) to text or to a longer varchar).",
                 fix: "Add a column of the new type, write both, backfill in batches, move reads over, then drop the old column in a later release.",
                 reported: "ALTER TABLE items ALTER COLUMN weight TYPE bigint;", safe: "ALTER TABLE items ADD COLUMN weight_big bigint;", growsWithTable: true),
        LintRule("set-not-null", .error, title: "SET NOT NULL without a validated CHECK", lock: "ACCESS EXCLUSIVE",
                 why: "SET NOT NULL reads every row to prove there is no NULL while the table is locked against reads and writes.",
                 fix: "ADD CONSTRAINT … CHECK (column IS NOT NULL) NOT VALID, VALIDATE CONSTRAINT it in a later migration, then SET NOT NULL, which uses the constraint instead of scanning (PostgreSQL 12 and later), and drop the CHECK.",
                 reported: "ALTER TABLE items ALTER COLUMN name SET NOT NULL;",
                 safe: "ALTER TABLE items ADD CONSTRAINT items_name_not_null CHECK (name IS NOT NULL) NOT VALID;", growsWithTable: true),
        LintRule("constraint-without-not-valid", .error, title: "ADD CONSTRAINT CHECK or FOREIGN KEY without NOT VALID", lock: "ACCESS EXCLUSIVE (SHARE ROW EXCLUSIVE for a foreign key)",
                 why: "Adding the constraint checks every existing row while holding a lock that blocks writes.",
                 fix: "ADD CONSTRAINT … NOT VALID (new rows are checked at once), then VALIDATE CONSTRAINT in a later migration: it scans under SHARE UPDATE EXCLUSIVE, which lets reads and writes go on.",
                 reported: "ALTER TABLE items ADD CONSTRAINT items_weight_check CHECK (weight >= 0);",
                 safe: "ALTER TABLE items ADD CONSTRAINT items_weight_check CHECK (weight >= 0) NOT VALID;", growsWithTable: true),
        LintRule("validate-in-same-transaction", .error, title: "NOT VALID and VALIDATE CONSTRAINT in one transaction", lock: "ACCESS EXCLUSIVE",
                 why: "The lock ADD CONSTRAINT took is held until the transaction ends, so the VALIDATE that follows scans the table under it: NOT VALID gains nothing.",
                 fix: "Move VALIDATE CONSTRAINT to a later migration (or make this file `-- migrate:no-transaction`).",
                 reported: "ALTER TABLE items ADD CONSTRAINT items_weight_check CHECK (weight >= 0) NOT VALID;\nALTER TABLE items VALIDATE CONSTRAINT items_weight_check;",
                 safe: "ALTER TABLE items VALIDATE CONSTRAINT items_weight_check;", growsWithTable: true),
        LintRule("unique-without-index", .error, title: "ADD CONSTRAINT UNIQUE or PRIMARY KEY without USING INDEX", lock: "ACCESS EXCLUSIVE",
                 why: "The constraint's index is built while the table is locked against reads and writes.",
                 fix: "CREATE UNIQUE INDEX CONCURRENTLY first, then ADD CONSTRAINT … UNIQUE (or PRIMARY KEY) USING INDEX, which only takes a brief lock.",
                 reported: "ALTER TABLE items ADD CONSTRAINT items_code_key UNIQUE (code);",
                 safe: "ALTER TABLE items ADD CONSTRAINT items_code_key UNIQUE USING INDEX items_code_idx;", growsWithTable: true),
        LintRule("exclude-constraint", .error, title: "ADD CONSTRAINT … EXCLUDE on an existing table", lock: "ACCESS EXCLUSIVE",
                 why: "An exclusion constraint builds its index and checks every row while the table is locked against reads and writes, and PostgreSQL has no NOT VALID or USING INDEX form for it.",
                 fix: "Declare it when the table is created; on a big table, add it in a maintenance window (`-- lint:ignore exclude-constraint`) or through a new table filled in the background.",
                 reported: "ALTER TABLE bookings ADD CONSTRAINT no_overlap EXCLUDE USING gist (room WITH =, during WITH &&);",
                 safe: "CREATE TABLE bookings (room int, during tstzrange, EXCLUDE USING gist (room WITH =, during WITH &&));", growsWithTable: true),
        LintRule("alter-domain-add-constraint", .error, title: "ALTER DOMAIN … ADD CONSTRAINT without NOT VALID", lock: "SHARE on every table using the domain",
                 why: "Every column of the domain, in every table, is checked while writes to those tables wait.",
                 fix: "ADD CONSTRAINT … NOT VALID, then ALTER DOMAIN … VALIDATE CONSTRAINT in a later migration.",
                 reported: "ALTER DOMAIN positive ADD CONSTRAINT positive_check CHECK (VALUE > 0);",
                 safe: "ALTER DOMAIN positive ADD CONSTRAINT positive_check CHECK (VALUE > 0) NOT VALID;"),
        LintRule("table-rewrite", .error, title: "VACUUM FULL, CLUSTER, SET LOGGED/UNLOGGED, SET TABLESPACE or REFRESH MATERIALIZED VIEW without CONCURRENTLY", lock: "ACCESS EXCLUSIVE",
                 why: "Each of these rewrites the whole relation while reads and writes wait.",
                 fix: "Use pg_repack or pg_squeeze for VACUUM FULL and CLUSTER, REFRESH MATERIALIZED VIEW CONCURRENTLY (with a unique index), and a maintenance window for the rest.",
                 reported: "VACUUM FULL items;", safe: "VACUUM (ANALYZE) items;", growsWithTable: true),
        LintRule("drop-not-null", .warning, title: "DROP NOT NULL",
                 why: "Instances of the previous release still running during the deploy may read the column assuming it is never NULL, and crash or misbehave on the first NULL the new release writes.",
                 fix: "First deploy code that handles NULL, then drop the constraint in a later release.",
                 reported: "ALTER TABLE items ALTER COLUMN name DROP NOT NULL;", safe: "ALTER TABLE items ALTER COLUMN name SET DEFAULT '';"),
        LintRule("drop-column", .warning, title: "DROP COLUMN",
                 why: "Instances of the previous release still running during the deploy may read or write the column.",
                 fix: "First deploy code that no longer uses it (and remove it from the model), then drop it in a later release.",
                 reported: "ALTER TABLE items DROP COLUMN notes;", safe: "ALTER TABLE items DROP CONSTRAINT items_notes_check;"),
        LintRule("drop-table", .warning, title: "DROP TABLE", lock: "ACCESS EXCLUSIVE",
                 why: "Instances of the previous release still running during the deploy may use the table.",
                 fix: "First deploy code that no longer uses the table, then drop it in a later release.",
                 reported: "DROP TABLE items;", safe: "CREATE TABLE scratch (id bigint);\nDROP TABLE scratch;"),
        LintRule("rename-column", .warning, title: "RENAME COLUMN",
                 why: "Instances of the previous release still running during the deploy still use the old name.",
                 fix: "Add a new column, write both, backfill, move reads over, then drop the old one in a later release (or use a staged migration with a view).",
                 reported: "ALTER TABLE items RENAME COLUMN notes TO remarks;", safe: "ALTER TABLE items ADD COLUMN remarks text;"),
        LintRule("rename-table", .warning, title: "RENAME TO",
                 why: "Instances of the previous release still running during the deploy still use the old name.",
                 fix: "Rename, then create a view under the old name until the previous release is gone; or move the code over first.",
                 reported: "ALTER TABLE items RENAME TO things;", safe: "CREATE VIEW items_v2 AS SELECT * FROM items;"),
        LintRule("truncate-cascade", .error, title: "TRUNCATE … CASCADE", lock: "ACCESS EXCLUSIVE",
                 why: "CASCADE also empties every table with a foreign key to the truncated one, and the tables referencing those: rows are lost in tables the statement does not name.",
                 fix: "Name every table to empty in the TRUNCATE, so the statement says what it deletes.",
                 reported: "TRUNCATE items CASCADE;", safe: "TRUNCATE items, item_tags;"),
        LintRule("drop-database", .error, title: "DROP DATABASE",
                 why: "A migration that drops a database destroys all its data, and cannot run in a transaction anyway.",
                 fix: "Drop databases by hand, never from a migration.",
                 reported: "DROP DATABASE app;", safe: "DROP SCHEMA scratch;"),
        LintRule("transaction-control", .error, title: "BEGIN, COMMIT or ROLLBACK in a transactional file",
                 why: "The runner wraps each migration in a transaction of its own and its history row commits with it; `up` refuses such a file.",
                 fix: "Remove them, or mark the file `-- migrate:no-transaction` to run its statements one by one.",
                 reported: "BEGIN;\nCREATE TABLE t (id bigint);\nCOMMIT;", safe: "CREATE TABLE t (id bigint);"),
        LintRule("transaction-nesting", .error, title: "BEGIN inside an open transaction",
                 why: "A second BEGIN does not nest: PostgreSQL warns and goes on, and the first COMMIT commits everything.",
                 fix: "Use one BEGIN … COMMIT, or SAVEPOINT for a nested part.",
                 reported: "-- migrate:no-transaction\nBEGIN;\nBEGIN;\nCOMMIT;", safe: "-- migrate:no-transaction\nBEGIN;\nCOMMIT;"),
        LintRule("uncommitted-transaction", .error, title: "BEGIN without COMMIT", lock: "every lock taken since BEGIN",
                 why: "In a no-transaction file, a BEGIN the file never commits keeps its locks while the runner goes on, and the work is lost when the connection closes.",
                 fix: "End the transaction with COMMIT in the same file.",
                 reported: "-- migrate:no-transaction\nBEGIN;\nUPDATE items SET rank = 0;", safe: "-- migrate:no-transaction\nBEGIN;\nUPDATE items SET rank = 0;\nCOMMIT;"),
        LintRule("enum-value-in-transaction", .error, title: "A value added to an enum used in the same transaction",
                 why: "ALTER TYPE … ADD VALUE cannot be used before its transaction commits: the migration fails with \"unsafe use of new value\" (55P04).",
                 fix: "Add the value in one migration and use it in a later one.",
                 reported: "ALTER TYPE status ADD VALUE 'archived';\nUPDATE items SET status = 'archived' WHERE done;",
                 safe: "ALTER TYPE status ADD VALUE IF NOT EXISTS 'archived';"),
        LintRule("enum-value-order", .warning, title: "ADD VALUE BEFORE/AFTER, or RENAME VALUE, on an enum",
                 why: "Enums compare and sort in declaration order: a value inserted in the middle changes ORDER BY and range comparisons of existing queries; a renamed value breaks the previous release still running.",
                 fix: "Add values at the end; rename by adding the new value, moving rows and code over, and leaving the old one unused.",
                 reported: "ALTER TYPE status ADD VALUE 'paused' BEFORE 'done';", safe: "ALTER TYPE status ADD VALUE 'paused';"),
        LintRule("missing-if-not-exists", .warning, title: "A non-transactional statement that cannot run twice",
                 why: "In a `-- migrate:no-transaction` file a run that dies resumes at the statement that was running, which may have finished: without IF [NOT] EXISTS it then fails with \"already exists\" or \"does not exist\".",
                 fix: "Write CREATE … IF NOT EXISTS, DROP … IF EXISTS and ADD COLUMN IF NOT EXISTS.",
                 reported: "-- migrate:no-transaction\nCREATE INDEX CONCURRENTLY items_name_idx ON items (name);",
                 safe: "-- migrate:no-transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS items_name_idx ON items (name);"),
        LintRule("missing-lock-timeout", .error, title: "Locking an existing table with lock_timeout disabled",
                 why: "A statement waiting for its lock behind a long transaction makes every later query on the table wait behind it: an outage as long as that transaction.",
                 fix: "Keep the runner's lock_timeout (it retries with back-off), or set one with `-- migrate:lock-timeout 5s`.",
                 reported: "-- migrate:lock-timeout 0\nALTER TABLE items ADD COLUMN rank integer;", safe: "-- migrate:lock-timeout 5s\nALTER TABLE items ADD COLUMN rank integer;"),
        LintRule("lock-timeout-disabled", .error, title: "SET lock_timeout = 0",
                 why: "The statements after it may wait for a lock forever, and every query on the table queues behind them.",
                 fix: "Remove it; override the runner's timeout with `-- migrate:lock-timeout 10s` if the default is too short.",
                 reported: "SET lock_timeout = 0;", safe: "SET lock_timeout = '2s';"),
        LintRule("prefer-text", .warning, .style, title: "varchar(n)",
                 why: "A length limit is a business rule that changes; lengthening varchar(n) is cheap, but shortening it or changing the limit's meaning rewrites the table, and text is stored the same way.",
                 fix: "Use text, with a CHECK (char_length(column) <= n) when the limit matters.",
                 reported: "CREATE TABLE t (name varchar(100));", safe: "CREATE TABLE t (name text CHECK (char_length(name) <= 100));"),
        LintRule("prefer-timestamptz", .warning, .style, title: "timestamp without time zone",
                 why: "A timestamp without time zone does not say which instant it is; servers in different time zones read it differently.",
                 fix: "Use timestamptz, which stores an instant (PostgresData's Date attributes use it).",
                 reported: "CREATE TABLE t (created timestamp);", safe: "CREATE TABLE t (created timestamptz);"),
        LintRule("prefer-bigint", .warning, .style, title: "integer, smallint or serial",
                 why: "A 32-bit key runs out at 2,147,483,647, and widening it later rewrites the table and its indexes.",
                 fix: "Use bigint (bigint GENERATED BY DEFAULT AS IDENTITY for keys).",
                 reported: "CREATE TABLE t (id integer);", safe: "CREATE TABLE t (id bigint);"),
        LintRule("prefer-identity", .warning, .style, title: "serial, bigserial or smallserial",
                 why: "A serial column's sequence is a separate object with its own ownership and permissions, which dumps, copies and grants easily get wrong.",
                 fix: "Use bigint GENERATED BY DEFAULT AS IDENTITY.",
                 reported: "CREATE TABLE t (id bigserial PRIMARY KEY);", safe: "CREATE TABLE t (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY);"),
        LintRule("no-char", .warning, .style, title: "char(n)",
                 why: "char(n) pads values with spaces, compares them ignoring the padding and stores them no faster than text.",
                 fix: "Use text (with a CHECK on the length if it matters).",
                 reported: "CREATE TABLE t (code char(3));", safe: "CREATE TABLE t (code text CHECK (char_length(code) = 3));"),
        LintRule("identifier-too-long", .warning, .style, title: "An identifier longer than 63 bytes",
                 why: "PostgreSQL silently truncates names to 63 bytes: two long names can become the same one, and the schema no longer matches the model's names.",
                 fix: "Choose a shorter name.",
                 reported: "CREATE TABLE t (a_column_name_that_goes_on_and_on_and_on_well_beyond_what_postgres_keeps bigint);",
                 safe: "CREATE TABLE t (a_shorter_name bigint);"),
    ]
}
