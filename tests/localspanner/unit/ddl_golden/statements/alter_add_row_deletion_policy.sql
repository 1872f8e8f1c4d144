alter table Events add row deletion policy ( older_than ( CreatedAt , interval 30 day ) )
