CREATE TABLE Albums (
  AlbumId UUID NOT NULL,
  Rating FLOAT32,
  Length INTERVAL,
  Title STRING(MAX),
  Title_Tokens TOKENLIST AS (TOKENIZE_FULLTEXT(Title)) HIDDEN,
  Rating_Tokens TOKENLIST AS (TOKENIZE_NUMBER(Rating)) HIDDEN
) PRIMARY KEY (AlbumId);
CREATE INDEX AlbumsByRating ON Albums (Rating DESC);
create search index AlbumsIndex on Albums (Title_Tokens, Rating_Tokens) storing (Length) options (sort_order_sharding = true);
CREATE SEARCH INDEX Gone ON Albums (Title_Tokens);
DROP SEARCH INDEX Gone;
