"""The two SQL dialects of Spanner as data: how names are quoted, how parameters are written, and the
few spellings that differ in the statements the watcher sends.

A statement is built once, with ``@name`` parameters and names quoted by the dialect; :meth:`Dialect.bind`
turns it into what the database takes. GoogleSQL keeps ``@name``; PostgreSQL numbers the parameters in
order of first use (``$1``, ``$2``, ...) and names them ``p1``, ``p2``, ... on the wire, as the client expects.

| | GoogleSQL | PostgreSQL |
|---|---|---|
| name | ```Singers``` | ``"Singers"`` (unquoted names fold to lower case) |
| parameter | ``@last`` | ``$1`` (sent as ``p1``) |
| array membership | ``x IN UNNEST(@a)`` | ``x = ANY($1)`` |
| not in the array | ``x NOT IN UNNEST(@a)`` | ``NOT (x = ANY($1))`` |
| default schema in INFORMATION_SCHEMA | ``''`` | ``'public'`` |
| the current time | ``SELECT CURRENT_TIMESTAMP()`` | ``SELECT CURRENT_TIMESTAMP`` |
| ascending, NULL first (Spanner's key order) | ``x`` | ``x NULLS FIRST`` (NULL sorts last by default) |

The dialect of a database is read from the database itself (:func:`dialect_of`), never configured.

Example:
    >>> POSTGRESQL.bind("SELECT * FROM t WHERE a > @last AND b = @last LIMIT @limit", {"last": 1, "limit": 5}, {})
    Statement(sql='SELECT * FROM t WHERE a > $1 AND b = $1 LIMIT $2', params={'p1': 1, 'p2': 5}, types={})
    >>> GOOGLE_SQL.quote("Singers"), POSTGRESQL.quote("Singers")
    ('`Singers`', '"Singers"')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.api_core import exceptions as gexc

from ..errors import ConfigurationError
from ..model import TableId
from ..sqlnames import validate_identifier

#: A parameter in a statement as the builders write it: ``@name``, not right after ``*`` (a PostgreSQL
#: hint opens with ``/*@``) nor inside a word.
_PARAMETER = re.compile(r"(?<![\w*@])@([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Statement:
    """One SQL text with its parameters and their types, ready for ``execute_sql``."""

    sql: str
    params: dict[str, Any] = field(default_factory=dict)
    types: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Dialect:
    """What differs between GoogleSQL and PostgreSQL in the statements the watcher sends."""

    name: str
    #: The value of ``google.cloud.spanner_admin_database_v1.DatabaseDialect`` (1 GoogleSQL, 2 PostgreSQL).
    database_dialect: int
    quote_char: str
    #: The default schema's name as INFORMATION_SCHEMA spells it.
    default_schema: str
    #: ``{column}`` is one of the elements of the array parameter ``{array}``.
    array_membership: str
    #: ``{column}`` is none of the elements of the array parameter ``{array}``.
    array_exclusion: str
    current_timestamp_sql: str
    #: Parameters go to the database as $1, $2, ... named p1, p2, ...
    positional: bool
    #: An ORDER BY item for ``{column}`` ascending with NULL before every value.
    ascending_nulls_first: str = "{column}"

    def __repr__(self) -> str:
        return self.name

    def quote(self, name: str, what: str = "identifier") -> str:
        """``name`` validated and quoted.

        >>> POSTGRESQL.quote("LastUpdated")
        '"LastUpdated"'
        """
        return f"{self.quote_char}{validate_identifier(name, what)}{self.quote_char}"

    def table(self, table: TableId) -> str:
        """A table's name for a FROM clause (its schema first when it has one).

        >>> POSTGRESQL.table(TableId("Singers", schema="music"))
        '"music"."Singers"'
        """
        return (self.quote(table.schema) + "." if table.schema else "") + self.quote(table.table)

    def schema_of(self, table: TableId) -> str:
        """The TABLE_SCHEMA value INFORMATION_SCHEMA gives ``table``.

        >>> GOOGLE_SQL.schema_of(TableId("T")), POSTGRESQL.schema_of(TableId("T"))
        ('', 'public')
        """
        return table.schema or self.default_schema

    def in_array(self, column_sql: str, param: str) -> str:
        """The condition "``column_sql`` is an element of the array parameter ``param``".

        >>> GOOGLE_SQL.in_array("`S`", "shard"), POSTGRESQL.in_array('"S"', "shard")
        ('`S` IN UNNEST(@shard)', '"S" = ANY(@shard)')
        """
        return self.array_membership.format(column=column_sql, array=f"@{param}")

    def not_in_array(self, column_sql: str, param: str) -> str:
        """The condition "``column_sql`` is none of the elements of the array parameter ``param``".

        >>> GOOGLE_SQL.not_in_array("`S`", "shard"), POSTGRESQL.not_in_array('"S"', "shard")
        ('`S` NOT IN UNNEST(@shard)', 'NOT ("S" = ANY(@shard))')
        """
        return self.array_exclusion.format(column=column_sql, array=f"@{param}")

    def order_key(self, column_sql: str) -> str:
        """An ORDER BY item: ascending, NULL first (the order the watcher's key conditions assume).

        >>> GOOGLE_SQL.order_key("`A`"), POSTGRESQL.order_key('"A"')
        ('`A`', '"A" NULLS FIRST')
        """
        return self.ascending_nulls_first.format(column=column_sql)

    def bind(self, sql: str, params: Mapping[str, Any], types: Mapping[str, Any]) -> Statement:
        """``sql`` written with ``@name`` parameters, as this dialect takes it.

        PostgreSQL: each name becomes ``$n`` in order of first use (one name used twice is one
        parameter). In both, parameters the text does not use are left out.

        >>> GOOGLE_SQL.bind("SELECT @a", {"a": 1, "b": 2}, {})
        Statement(sql='SELECT @a', params={'a': 1}, types={})
        >>> POSTGRESQL.bind("SELECT @b, @a", {"a": 1, "b": 2, "unused": 3}, {"a": "INT64"})
        Statement(sql='SELECT $1, $2', params={'p1': 2, 'p2': 1}, types={'p2': 'INT64'})
        """
        numbers: dict[str, int] = {}

        def number(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in params:
                raise KeyError(f"parameter @{name} of the statement has no value: {sql}")
            n = numbers.setdefault(name, len(numbers) + 1)
            return f"${n}" if self.positional else match.group(0)

        text = _PARAMETER.sub(number, sql)
        wire = {name: (f"p{n}" if self.positional else name) for name, n in numbers.items()}
        return Statement(text, {wire[name]: params[name] for name in numbers},
                         {wire[name]: types[name] for name in numbers if name in types})


GOOGLE_SQL = Dialect("GoogleSQL", 1, "`", "", "{column} IN UNNEST({array})", "{column} NOT IN UNNEST({array})",
                     "SELECT CURRENT_TIMESTAMP()", False)
POSTGRESQL = Dialect("PostgreSQL", 2, '"', "public", "{column} = ANY({array})", "NOT ({column} = ANY({array}))",
                     "SELECT CURRENT_TIMESTAMP", True, "{column} NULLS FIRST")

#: Each dialect by its DatabaseDialect value; unspecified (0) is GoogleSQL, Spanner's default.
DIALECTS: dict[int, Dialect] = {0: GOOGLE_SQL, 1: GOOGLE_SQL, 2: POSTGRESQL}
#: Each dialect by its name (what a picklable plan carries to Spark's tasks).
BY_NAME: dict[str, Dialect] = {GOOGLE_SQL.name: GOOGLE_SQL, POSTGRESQL.name: POSTGRESQL}
#: The same by the name INFORMATION_SCHEMA.DATABASE_OPTIONS gives ('database_dialect').
_BY_OPTION = {"GOOGLE_STANDARD_SQL": GOOGLE_SQL, "POSTGRESQL": POSTGRESQL}
#: A query both dialects read alike (unquoted names, a string literal), for when the admin API says nothing.
DIALECT_OPTION_SQL = ("SELECT OPTION_VALUE FROM INFORMATION_SCHEMA.DATABASE_OPTIONS "
                      "WHERE OPTION_NAME = 'database_dialect'")


def dialect_of(database: Any) -> Dialect:
    """The dialect of ``database`` (a client ``Database``): what the client knows after its reload
    (GetDatabase), else what the database's own options say (a caller without admin rights).

    An object without ``database_dialect`` (a test double, say) is GoogleSQL.
    """
    try:
        value = getattr(database, "database_dialect", 0)
    except gexc.GoogleAPICallError:  # no right to GetDatabase: ask the data plane instead
        return _from_options(database)
    return DIALECTS.get(int(value or 0), GOOGLE_SQL)


def _from_options(database: Any) -> Dialect:
    with database.snapshot() as snap:
        rows = list(snap.execute_sql(DIALECT_OPTION_SQL))
    return _BY_OPTION.get(str(rows[0][0]).upper(), GOOGLE_SQL) if rows else GOOGLE_SQL


def require_dialect(database: Any, supported: tuple[Dialect, ...], what: str) -> Dialect:
    """The dialect of ``database`` when ``what`` reads it, else a ConfigurationError saying which it reads.

    >>> class Postgres:
    ...     database_dialect = 2
    >>> require_dialect(Postgres(), (GOOGLE_SQL,), "change sets")
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: change sets are read in GoogleSQL databases only; this database is PostgreSQL
    """
    dialect = dialect_of(database)
    if dialect not in supported:
        raise ConfigurationError(f"{what} are read in {' and '.join(d.name for d in supported)} databases only; "
                                 f"this database is {dialect.name}")
    return dialect
