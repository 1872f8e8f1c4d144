-- The changelog inside Spanner of ../watcher/V003 in a PostgreSQL database: the same columns and key,
-- names in lower case. JSON values are jsonb; commit timestamps are spanner.commit_timestamp.
CREATE TABLE IF NOT EXISTS watcher_changelog (
  table_name varchar NOT NULL,
  keys varchar NOT NULL,                              -- JSON array of the primary key, in key order
  commit_timestamp spanner.commit_timestamp NOT NULL,
  change_id varchar NOT NULL,                         -- deterministic, for de-duplication
  mod_type varchar(16) NOT NULL,                      -- INSERT, UPDATE or DELETE
  new_values jsonb,
  old_values jsonb,                                   -- previous values of the changed columns
  value_capture_type varchar(32),
  record_sequence bigint,                             -- order within one commit timestamp
  transaction_group varchar,                          -- rows sharing a commit timestamp
  number_of_records_in_group bigint,
  read_timestamp timestamptz,                         -- when the watcher read the change
  read_method varchar(16),                            -- cdc, backfill or reconcile
  shard varchar,
  watcher_id varchar,
  -- The computed shard column and the NULL-filtered index on (shard, commit timestamp) below, as in GoogleSQL.
  changelog_shard bigint GENERATED ALWAYS AS (mod(spanner.farm_fingerprint(table_name || ' ' || keys), 19)) STORED,
  PRIMARY KEY (table_name, keys, commit_timestamp)
);

CREATE INDEX IF NOT EXISTS idx_watcher_changelog_changelog_shard_commit_timestamp
  ON watcher_changelog (changelog_shard, commit_timestamp)
  WHERE changelog_shard IS NOT NULL AND commit_timestamp IS NOT NULL;

-- Up to which commit timestamp the changelog of each table is complete.
CREATE TABLE IF NOT EXISTS watcher_changelog_watermarks (
  table_name varchar NOT NULL,
  watermark timestamptz NOT NULL,
  updated_at spanner.commit_timestamp NOT NULL,
  PRIMARY KEY (table_name)
);
