"""A database's SQLite file: connections, tables in step with the catalog, mutations, row versions, counters."""
