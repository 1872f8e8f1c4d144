-- The change-stream progress table of ../watcher/V004 in a PostgreSQL database: the names in lower case,
-- the same table the progress store creates itself there
-- (watcher.capture.change_streams.spanner_progress.postgresql_statements).
CREATE TABLE IF NOT EXISTS watcher_change_stream_partitions (
  stream_name varchar NOT NULL,
  watcher_id varchar NOT NULL,
  partition_token varchar NOT NULL,
  parent_tokens varchar[],
  start_timestamp timestamptz NOT NULL,
  watermark timestamptz NOT NULL,
  delivered_at_watermark varchar[],
  state varchar(16) NOT NULL,                         -- CREATED, RUNNING or FINISHED
  updated_at spanner.commit_timestamp NOT NULL,
  PRIMARY KEY (stream_name, watcher_id, partition_token)
);
