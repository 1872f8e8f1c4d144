"""GoogleSQL and PostgreSQL: what differs between the dialects, and PostgreSQL statements as GoogleSQL."""
