drop search index if exists AlbumsIndex
