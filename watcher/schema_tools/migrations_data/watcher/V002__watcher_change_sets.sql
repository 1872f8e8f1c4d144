-- Change sets, for tables without a commit-timestamp column (the Java library's CHANGE_SETS):
-- every read/write transaction writes one row here, and puts its CHANGE_SET_ID into a
-- CHANGE_SET_ID column of each data row it changes. The change-set poller tails this table
-- by COMMIT_TIMESTAMP, then reads the data rows of each new change set.
CREATE TABLE IF NOT EXISTS CHANGE_SETS (
  CHANGE_SET_ID STRING(MAX),
  COMMIT_TIMESTAMP TIMESTAMP OPTIONS (allow_commit_timestamp=true),
) PRIMARY KEY (CHANGE_SET_ID);
