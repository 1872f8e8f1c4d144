alter table Singers add column if not exists Modified timestamp options (allow_commit_timestamp = true)
