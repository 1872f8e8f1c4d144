CREATE INDEX SingersByLastName ON Singers(LastName) STORING (FirstName)
