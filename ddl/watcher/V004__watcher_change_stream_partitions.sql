-- Where each ChangeStreamWatcher stands in each partition of its change stream: one row per
-- (stream, watcher id, partition token). A restart reads every unfinished partition again from
-- its WATERMARK, skipping the records at the watermark listed in DELIVERED_AT_WATERMARK
-- (server transaction id/record sequence), and never reads a FINISHED one again. A CREATED
-- child starts once all of PARENT_TOKENS are FINISHED. The row with the empty token stands for
-- the stream's first query (its START_TIMESTAMP is where the watcher began).
--
-- Rows are written after the callbacks of a batch returned, so the stored place never passes
-- a change the application has not handled.
CREATE TABLE IF NOT EXISTS WATCHER_CHANGE_STREAM_PARTITIONS (
  STREAM_NAME STRING(MAX) NOT NULL,
  WATCHER_ID STRING(MAX) NOT NULL,
  PARTITION_TOKEN STRING(MAX) NOT NULL,
  PARENT_TOKENS ARRAY<STRING(MAX)>,
  START_TIMESTAMP TIMESTAMP NOT NULL,
  WATERMARK TIMESTAMP NOT NULL,
  DELIVERED_AT_WATERMARK ARRAY<STRING(MAX)>,
  STATE STRING(16) NOT NULL,                          -- CREATED, RUNNING or FINISHED
  UPDATED_AT TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true),
) PRIMARY KEY (STREAM_NAME, WATCHER_ID, PARTITION_TOKEN);
