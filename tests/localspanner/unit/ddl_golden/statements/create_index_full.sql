create unique null_filtered index if not exists AlbumsByTitle on Albums (SingerId, Title desc, Released asc) storing (Tags, Meta), interleave in Singers
