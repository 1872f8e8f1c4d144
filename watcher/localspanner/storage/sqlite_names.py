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

from ..datamodel.types import TypeCode
from ..schema.catalog import Table

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


def rowid_key(table: Table) -> bool:
    """Whether ``table`` is stored as a SQLite rowid table keyed by its one NOT NULL INT64 column.

    Such a key is an ``INTEGER PRIMARY KEY`` (an alias of the rowid): an upsert then finds
    its row by integer instead of comparing records, and the row lives in the table's own
    b-tree. SQLite turns a NULL written to that column into a new rowid instead of refusing
    it, so every path that writes rows refuses a NULL key itself (``mutations.py``, the DML
    translator). A descending key (``INTEGER PRIMARY KEY DESC`` is no rowid alias), a
    generated one, and one with a DEFAULT (a sequence, an identity column: SQLite ignores the
    DEFAULT of an ``INTEGER PRIMARY KEY`` and numbers the rows itself) keep the WITHOUT ROWID
    layout.

    >>> from watcher.localspanner.datamodel import types as T
    >>> from watcher.localspanner.schema.catalog import Column, KeyPart
    >>> rowid_key(Table("T", (Column("K", T.INT64, not_null=True),), (KeyPart("K"),)))
    True
    >>> rowid_key(Table("T", (Column("K", T.STRING, not_null=True),), (KeyPart("K"),)))
    False
    """
    if len(table.primary_key) != 1 or table.primary_key[0].descending:
        return False
    column = table.column(table.primary_key[0].column)
    return (column is not None and column.not_null and column.type.code == TypeCode.INT64
            and column.generated is None and column.default is None)


def user_facing(text: str) -> str:
    """``text`` (a SQLite message) with the names of internal helper tables and indexes made the user's."""
    return text.replace(REBUILD_PREFIX, "").replace(UNIQUE_NULLS_PREFIX, "")
