-- The changelog inside Spanner, after the change-history pattern of Spanner's commit-timestamp
-- documentation (DocumentHistory: one row per version, keyed by the entity's key and then its
-- commit timestamp). One row per change of a watched row; the columns are the changelog record
-- of the Spark job (watcher.changelog.records), so both hold the same thing.
--
-- The key starts with the table and the changed row's key, never with the commit timestamp
-- (that would send every write to one split). COMMIT_TIMESTAMP allows commit timestamps, so an
-- application can also append history rows itself in the same transaction as its change
-- (history-table mode) with spanner.commit_timestamp().
CREATE TABLE IF NOT EXISTS WATCHER_CHANGELOG (
  TABLE_NAME STRING(MAX) NOT NULL,
  KEYS STRING(MAX) NOT NULL,                          -- JSON array of the primary key, in key order
  COMMIT_TIMESTAMP TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true),
  CHANGE_ID STRING(MAX) NOT NULL,                     -- deterministic, for de-duplication
  MOD_TYPE STRING(16) NOT NULL,                       -- INSERT, UPDATE or DELETE
  NEW_VALUES JSON,
  OLD_VALUES JSON,                                    -- previous values of the changed columns
  VALUE_CAPTURE_TYPE STRING(32),
  RECORD_SEQUENCE INT64,                              -- order within one commit timestamp
  TRANSACTION_GROUP STRING(MAX),                      -- rows sharing a commit timestamp
  NUMBER_OF_RECORDS_IN_GROUP INT64,
  READ_TIMESTAMP TIMESTAMP,                           -- when the watcher read the change
  READ_METHOD STRING(16),                             -- cdc, backfill or reconcile
  SHARD STRING(MAX),
  WATCHER_ID STRING(MAX),
  -- The changelog can itself be polled at scale like any watched table: a computed shard column that no
  -- writer has to fill in, and a NULL_FILTERED index on (shard, commit timestamp) below.
  CHANGELOG_SHARD INT64 AS (MOD(FARM_FINGERPRINT(TABLE_NAME || ' ' || KEYS), 19)) STORED,
) PRIMARY KEY (TABLE_NAME, KEYS, COMMIT_TIMESTAMP);

CREATE NULL_FILTERED INDEX IF NOT EXISTS Idx_WATCHER_CHANGELOG_CHANGELOG_SHARD_COMMIT_TIMESTAMP
  ON WATCHER_CHANGELOG (CHANGELOG_SHARD, COMMIT_TIMESTAMP);

-- Up to which commit timestamp the changelog of each table is complete.
CREATE TABLE IF NOT EXISTS WATCHER_CHANGELOG_WATERMARKS (
  TABLE_NAME STRING(MAX) NOT NULL,
  WATERMARK TIMESTAMP NOT NULL,
  UPDATED_AT TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true),
) PRIMARY KEY (TABLE_NAME);
