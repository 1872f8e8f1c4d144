"""Spanner's two SQL dialects, GoogleSQL and PostgreSQL: every SQL text the watcher sends, one table per concern.

:mod:`.base` holds what differs in every statement (quoting, parameters, array membership) and finds a
database's dialect; :mod:`.schema` the INFORMATION_SCHEMA queries; :mod:`.hints` the table hints;
:mod:`.types` the column type names; :mod:`.checkpoints` the checkpoint table's statements; :mod:`.ddl` the
DDL the schema helpers print; :mod:`.pruning` the index pruning's statements; :mod:`.migrations` the migration
runner's tables and which dialect a migration file is in. The poll
queries themselves are built in :mod:`watcher.capture.polling` from these parts.
"""

from .base import DIALECTS, GOOGLE_SQL, POSTGRESQL, Dialect, Statement, dialect_of

__all__ = ["DIALECTS", "GOOGLE_SQL", "POSTGRESQL", "Dialect", "Statement", "dialect_of"]
