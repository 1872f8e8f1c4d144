-- The checkpoint table of ../watcher/V001 in a PostgreSQL database: the Java library's names in lower
-- case, as PostgreSQL folds unquoted names, and PostgreSQL's types; the same table the checkpoint
-- repository creates itself there (watcher.checkpoints.create_table_ddl).
--
-- last_seen_position is the exact position inside a group of rows that share one commit timestamp.
CREATE TABLE IF NOT EXISTS last_seen_commit_timestamps (
  database_name varchar NOT NULL,
  table_catalog varchar NOT NULL,
  table_schema varchar NOT NULL,
  table_name varchar NOT NULL,
  shard_id_bool boolean,
  shard_id_bytes bytea,
  shard_id_date date,
  shard_id_float64 double precision,
  shard_id_int64 bigint,
  shard_id_string varchar,
  shard_id_timestamp timestamptz,
  last_seen_commit_timestamp timestamptz NOT NULL,
  last_seen_position varchar,
  PRIMARY KEY (database_name, table_catalog, table_schema, table_name, shard_id_bool, shard_id_bytes,
               shard_id_date, shard_id_float64, shard_id_int64, shard_id_string, shard_id_timestamp)
);
