-- Where each watcher stands: the Java Spanner Change Watcher's checkpoint table, column for
-- column and key for key, so watchers of either library can share it and a user switching
-- from the Java library keeps their place.
--
-- LAST_SEEN_POSITION is our one addition: the exact position inside a group of rows that
-- share one commit timestamp (versioned JSON). It is nullable, so the Java library ignores it.
CREATE TABLE IF NOT EXISTS LAST_SEEN_COMMIT_TIMESTAMPS (
  DATABASE_NAME STRING(MAX) NOT NULL,
  TABLE_CATALOG STRING(MAX) NOT NULL,
  TABLE_SCHEMA STRING(MAX) NOT NULL,
  TABLE_NAME STRING(MAX) NOT NULL,
  SHARD_ID_BOOL BOOL,
  SHARD_ID_BYTES BYTES(MAX),
  SHARD_ID_DATE DATE,
  SHARD_ID_FLOAT64 FLOAT64,
  SHARD_ID_INT64 INT64,
  SHARD_ID_STRING STRING(MAX),
  SHARD_ID_TIMESTAMP TIMESTAMP,
  LAST_SEEN_COMMIT_TIMESTAMP TIMESTAMP NOT NULL,
  LAST_SEEN_POSITION STRING(MAX),
) PRIMARY KEY (DATABASE_NAME, TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, SHARD_ID_BOOL, SHARD_ID_BYTES,
               SHARD_ID_DATE, SHARD_ID_FLOAT64, SHARD_ID_INT64, SHARD_ID_STRING, SHARD_ID_TIMESTAMP);

-- A table created earlier by the Java library has no position column yet.
ALTER TABLE LAST_SEEN_COMMIT_TIMESTAMPS ADD COLUMN IF NOT EXISTS LAST_SEEN_POSITION STRING(MAX);
