-- Items are listed by creation date. Built concurrently: writes to items go on meanwhile.
-- migrate:no-transaction
-- migrate:up
CREATE INDEX CONCURRENTLY IF NOT EXISTS "items_created_at_idx" ON "items" ("created_at");

-- migrate:down
DROP INDEX CONCURRENTLY IF EXISTS "items_created_at_idx";
