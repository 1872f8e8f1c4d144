ALTER TABLE Singers ALTER COLUMN LastUpdated SET OPTIONS (allow_commit_timestamp=null)
