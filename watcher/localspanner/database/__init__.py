"""One database as a whole: its engine, schema changes, settings, row-deletion sweeps, split points, dialect."""
