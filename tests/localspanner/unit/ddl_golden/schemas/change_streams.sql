-- Change streams print after the tables and indexes, with only the options set explicitly.
CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(200), LastName STRING(200)) PRIMARY KEY (SingerId);
CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX)) PRIMARY KEY (SingerId, AlbumId),
  INTERLEAVE IN PARENT Singers ON DELETE CASCADE;
CREATE CHANGE STREAM Everything FOR ALL OPTIONS (retention_period = '7d');
CREATE CHANGE STREAM Names FOR singers(firstname), Albums();
CREATE CHANGE STREAM Idle;
ALTER CHANGE STREAM Names SET OPTIONS (value_capture_type = 'NEW_ROW', exclude_update = true);
ALTER CHANGE STREAM Idle SET FOR Albums(Title);
ALTER CHANGE STREAM Everything SET OPTIONS (retention_period = null);
CREATE CHANGE STREAM Gone;
DROP CHANGE STREAM Gone;
