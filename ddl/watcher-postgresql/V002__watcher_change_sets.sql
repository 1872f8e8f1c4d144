-- The change-set table of ../watcher/V002 in a PostgreSQL database. Its names are double-quoted as
-- GoogleSQL spells them, as the change-set writers and poller use them in both dialects
-- (watcher.capture.helper_tables.change_sets.change_sets_table_ddl); a PostgreSQL primary key is NOT NULL.
CREATE TABLE IF NOT EXISTS "CHANGE_SETS" (
  "CHANGE_SET_ID" varchar NOT NULL,
  "COMMIT_TIMESTAMP" spanner.commit_timestamp,
  PRIMARY KEY ("CHANGE_SET_ID")
);
