ALTER TABLE Singers ALTER COLUMN LastUpdated TIMESTAMP OPTIONS (allow_commit_timestamp=null)
