-- Fine-grained access control: roles, privileges on tables, columns, views and change streams, memberships.
CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(MAX), Secret STRING(MAX)) PRIMARY KEY (SingerId);
CREATE VIEW Names SQL SECURITY INVOKER AS SELECT Singers.Name FROM Singers;
CREATE CHANGE STREAM Everything FOR ALL;
create role reader;
CREATE ROLE writer;
CREATE ROLE lead;
GRANT SELECT(SingerId, Name), UPDATE(Name) ON TABLE Singers TO ROLE reader;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE Singers TO ROLE writer;
GRANT SELECT ON VIEW Names TO ROLE public;
GRANT SELECT ON CHANGE STREAM Everything TO ROLE reader;
GRANT EXECUTE ON TABLE FUNCTION READ_Everything TO ROLE reader;
GRANT ROLE reader, writer TO ROLE lead;
REVOKE DELETE ON TABLE Singers FROM ROLE writer;
