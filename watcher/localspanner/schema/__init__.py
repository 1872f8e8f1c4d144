"""A database's schema: the catalog, the rules DDL statements are checked by, roles, protos and options."""
