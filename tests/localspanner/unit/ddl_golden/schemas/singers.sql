-- The Java library's benchmark schema (Singers with its shard column), the watcher's checkpoint table,
-- an interleaved child with its own indexes, and statements applied afterwards.
CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(200), LastName STRING(200) NOT NULL, BirthDate DATE, Picture BYTES(MAX), LastUpdated TIMESTAMP OPTIONS (allow_commit_timestamp=true), Processed BOOL, ShardId INT64 AS (CASE WHEN Processed THEN NULL ELSE MOD(FARM_FINGERPRINT(COALESCE(FirstName || ' ', '') || LastName), 19) END) STORED) PRIMARY KEY (SingerId);

CREATE NULL_FILTERED INDEX Idx_Singers_ShardId_LastUpdated ON Singers (ShardId, LastUpdated);

CREATE TABLE LAST_SEEN_COMMIT_TIMESTAMPS (
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
  LAST_SEEN_COMMIT_TIMESTAMP TIMESTAMP NOT NULL
) PRIMARY KEY (DATABASE_NAME, TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, SHARD_ID_BOOL, SHARD_ID_BYTES, SHARD_ID_DATE, SHARD_ID_FLOAT64, SHARD_ID_INT64, SHARD_ID_STRING, SHARD_ID_TIMESTAMP);

create table albums (
  singerid int64 not null,
  AlbumId int64 not null,
  Title string(max),
  LastUpdated timestamp not null options (allow_commit_timestamp = true),
) primary key (SingerId, AlbumId), interleave in parent singers on delete cascade;

CREATE UNIQUE INDEX AlbumsBySingerTitle ON Albums (SingerId, Title DESC) STORING (LastUpdated), INTERLEAVE IN Singers;

CREATE INDEX SingersByName ON Singers (LastName, FirstName);

ALTER TABLE Singers ADD COLUMN `Order` INT64;

ALTER TABLE Singers ALTER COLUMN FirstName STRING(MAX);

DROP INDEX SingersByName;
