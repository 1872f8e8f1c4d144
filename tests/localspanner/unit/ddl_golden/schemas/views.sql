CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(MAX)) PRIMARY KEY (SingerId);
CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX)) PRIMARY KEY (SingerId, AlbumId),
  INTERLEAVE IN PARENT Singers ON DELETE CASCADE;
CREATE VIEW SingerAlbums SQL SECURITY INVOKER AS SELECT s.Name, a.Title FROM Singers AS s JOIN Albums AS a ON s.SingerId = a.SingerId;
create or replace view Titles sql security definer as select SingerAlbums.Title from SingerAlbums;
CREATE OR REPLACE VIEW SingerAlbums SQL SECURITY INVOKER AS SELECT s.Name, a.Title, a.AlbumId FROM Singers AS s JOIN Albums AS a ON s.SingerId = a.SingerId;
