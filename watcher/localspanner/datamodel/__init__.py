"""Spanner's types and values: the type system and the value codec, INTERVAL, ARRAY and STRUCT values."""
