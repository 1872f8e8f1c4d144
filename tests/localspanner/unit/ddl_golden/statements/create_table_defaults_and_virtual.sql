CREATE TABLE Events (
  Id STRING(36) NOT NULL DEFAULT (GENERATE_UUID()),
  Created TIMESTAMP NOT NULL DEFAULT (CURRENT_TIMESTAMP()) OPTIONS (allow_commit_timestamp = false),
  Name STRING(MAX) DEFAULT ('a (paren) and a '')'' quote'),
  NameLen INT64 AS (CHAR_LENGTH(Name)),
  Upper STRING(MAX) AS (UPPER(Name)) STORED,
) PRIMARY KEY (Id)
