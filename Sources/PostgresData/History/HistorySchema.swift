import PostgresClient

/// The tables, trigger and channel of persistent history. They belong to PostgresData, not
/// to the model: a store with history tracking creates them when they are missing, as the
/// migration engine creates its own table.
///
/// One `postgres_data_history_transaction` row per save or batch request (its `xid8`, the
/// author, the context, the writing coordinator, the time), and one
/// `postgres_data_history_change` row per entity and kind of change in it, whose keys are
/// an `int8multirange`: a save of 100,000 new objects (consecutive keys) writes two small
/// history rows, not 100,001 rows or an 800 kB array.
enum HistorySchema {
    static let transactionTable = "postgres_data_history_transaction"
    static let changeTable = "postgres_data_history_change"
    /// The channel every history transaction notifies when it commits; the payload is the
    /// writing coordinator's instance ID, so that a coordinator ignores its own saves.
    static let channel = "postgres_data_history"

    static var transactions: String { quoteIdentifier(transactionTable) }
    static var changes: String { quoteIdentifier(changeTable) }

    private static let creation = """
        CREATE TABLE IF NOT EXISTS \(transactions) (
            "id" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            "xid" xid8 NOT NULL DEFAULT pg_current_xact_id(),
            "author" text,
            "context_name" text,
            "origin" uuid NOT NULL,
            "timestamp" timestamptz NOT NULL DEFAULT clock_timestamp()
        );
        CREATE INDEX IF NOT EXISTS "postgres_data_history_transaction_xid" ON \(transactions) ("xid");
        CREATE INDEX IF NOT EXISTS "postgres_data_history_transaction_timestamp" ON \(transactions) ("timestamp");
        CREATE TABLE IF NOT EXISTS \(changes) (
            "transaction_id" bigint NOT NULL REFERENCES \(transactions) ("id") ON DELETE CASCADE,
            "entity" text NOT NULL,
            "change_type" smallint NOT NULL CHECK ("change_type" BETWEEN 0 AND 2),
            "object_keys" int8multirange NOT NULL,
            "updated_properties" text[],
            "tombstones" jsonb
        );
        CREATE INDEX IF NOT EXISTS "postgres_data_history_change_transaction" ON \(changes) ("transaction_id");
        CREATE OR REPLACE FUNCTION "postgres_data_history_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('\(channel)', NEW."origin"::text);
            RETURN NULL;
        END $$;
        CREATE TRIGGER "postgres_data_history_notify" AFTER INSERT ON \(transactions)
            FOR EACH ROW EXECUTE FUNCTION "postgres_data_history_notify"();
        """

    /// Creates the history tables unless they exist (several processes may load at once:
    /// the first creates them under a lock, the others find them there).
    static func prepare(_ connection: Connection) async throws {
        func present(_ connection: Connection) async throws -> Bool {
            try await connection.query("SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL",
                                       transactionTable, changeTable)[0].decode(Bool.self, at: 0)
        }
        if try await present(connection) {
            // Tables made before tombstones were kept: the column is added once (no rewrite).
            let hasTombstones = try await connection.query(
                "SELECT EXISTS (SELECT FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'tombstones' AND NOT attisdropped)",
                changeTable)[0].decode(Bool.self, at: 0)
            if !hasTombstones { try await connection.query("ALTER TABLE \(changes) ADD COLUMN IF NOT EXISTS \"tombstones\" jsonb") }
            return
        }
        try await connection.withTransaction { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(hashtext('postgres_data_schema'))")
            if try await present(connection) { return }
            try await connection.execute(script: creation)
        }
    }
}
