"""How the server names things inside SQLite, at the bottom of the import graph.

Identifier quoting, the prefixes of the helper tables and indexes the storage adds, and
turning a SQLite message back into the user's names. Storage, SQL translation, schema
sync and error mapping all use these, so they live below all of them.

Example:
    >>> print(quote('Order'), quote('a"b'))
    "Order" "a""b"
    >>> user_facing("UNIQUE constraint failed: index '_ls_nulls_ByName'")
    "UNIQUE constraint failed: index 'ByName'"
"""

from __future__ import annotations

from .catalog import Table

#: Name prefix of the unique index that holds the key of a table with a nullable key column.
KEY_INDEX_PREFIX = "_ls_pk_"
#: Name prefix of the companion index that makes NULLs collide in a UNIQUE index.
UNIQUE_NULLS_PREFIX = "_ls_nulls_"
#: Name prefix of the unique index on a foreign key's referenced columns (SQLite needs one).
FK_INDEX_PREFIX = "_ls_fk_"
#: Name prefix of the temporary copy a table rebuild writes into (kept out of user-facing messages).
REBUILD_PREFIX = "_ls_rebuild_"


def quote(name: str) -> str:
    """A SQLite identifier (double-quoted, so keywords and any case are safe)."""
    return '"' + name.replace('"', '""') + '"'


def has_nullable_key(table: Table) -> bool:
    """Whether a key column of ``table`` may hold NULL (its storage then has no SQLite PRIMARY KEY)."""
    return any(not c.not_null for c in table.key_columns)


def user_facing(text: str) -> str:
    """``text`` (a SQLite message) with the names of internal helper tables and indexes made the user's."""
    return text.replace(REBUILD_PREFIX, "").replace(UNIQUE_NULLS_PREFIX, "")
