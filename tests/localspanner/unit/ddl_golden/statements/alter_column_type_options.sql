ALTER TABLE Singers ALTER COLUMN LastUpdated TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true)
