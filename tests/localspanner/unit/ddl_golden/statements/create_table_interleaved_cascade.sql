create table if not exists Albums (
  SingerId int64 not null,   -- parent key
  AlbumId  int64 not null,   # own key
  /* a multi-line
     comment */
  Title    string(max),
  Tags     array<string(64)>,
  Released date default (DATE '2000-01-01'),
  Meta     json,
  Price    numeric,
  Score    float64,
) primary key (SingerId, AlbumId desc),
  interleave in parent Singers on delete cascade;
