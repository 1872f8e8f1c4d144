"""DDL helpers: the schema that makes commit-timestamp polling scale, as GoogleSQL statements.

Three pieces make a poll cost what it returns instead of what the table holds (seeds 001
and 002): a commit-timestamp column; a computed shard column
``INT64 AS (MOD(FARM_FINGERPRINT(<columns>), N)) STORED`` that Spanner fills in for every
writer, old or new, without the writers mentioning it; and a NULL_FILTERED index on
(shard column, commit timestamp), which stays small when old rows are nulled out of it
(see :mod:`watcher.schema_tools.pruning`). :func:`sharded_polling` builds all of them for an
existing table and hands back the matching watcher settings (a
:class:`~watcher.capture.shards.FixedShardProvider` over all 2N-1 shard values and the
``FORCE_INDEX`` hint), so one call sets up both the schema and the watcher.

Every name passes through :func:`~watcher.sqlnames.quote_identifier`, types are checked
against Spanner's type grammar and literals are escaped, so no argument can change the
shape of a statement. A commit-timestamp column may not lead a primary key or an index
(a write hot spot, seed 001) unless ``allow_hotspot=True``.

Example:
    >>> setup = sharded_polling("Singers", ["FirstName", ShardSource("LastName", not_null=True)],
    ...                         commit_timestamp="existing")
    >>> print(";\\n".join(setup.statements))
    ALTER TABLE `Singers` ADD COLUMN `ShardId` INT64 AS (MOD(FARM_FINGERPRINT(COALESCE(`FirstName` || ' ', '') || `LastName`), 19)) STORED;
    CREATE NULL_FILTERED INDEX `Idx_Singers_ShardId_LastUpdated` ON `Singers` (`ShardId`, `LastUpdated`)
    >>> setup.table_hint
    '@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}'
    >>> setup.shard_provider
    FixedShardProvider('ShardId', [-18, -17, ..., 17, 18])
"""

from __future__ import annotations

import base64
import datetime as dt
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import farmhash  # type: ignore[import-untyped]

from ..capture.shards import FixedShardProvider
from ..errors import DdlError, HotspotError
from ..sqlnames import quote_identifier, validate_identifier

#: The seed's shard count: MOD(..., 19) gives the 37 values -18..18.
DEFAULT_SHARDS = 19
#: Shard counts outside this range work but are rarely what one wants (a warning says so).
RECOMMENDED_SHARDS = range(2, 1001)
#: Above this, the shard provider's parameter list (2N-1 values) gets unreasonable.
MAX_SHARDS = 1_000_000
DEFAULT_SHARD_COLUMN = "ShardId"
DEFAULT_COMMIT_TIMESTAMP_COLUMN = "LastUpdated"
DEFAULT_PROCESSED_COLUMN = "Processed"


class ShardCountWarning(UserWarning):
    """The shard count works, but is outside :data:`RECOMMENDED_SHARDS`."""


# --- types and literals ----------------------------------------------------------------------------

_SCALAR = r"(?:BOOL|INT64|FLOAT32|FLOAT64|NUMERIC|JSON|DATE|TIMESTAMP|(?:STRING|BYTES)\(\s*(?:MAX|[1-9][0-9]{0,6})\s*\))"
_TYPE = re.compile(rf"^\s*(?:{_SCALAR}|ARRAY\s*<\s*{_SCALAR}\s*>)\s*$", re.IGNORECASE)


def column_type(text: str) -> str:
    """``text`` as a Spanner column type (upper case, no spaces), or DdlError.

    >>> column_type("string(200)"), column_type("ARRAY<INT64>")
    ('STRING(200)', 'ARRAY<INT64>')
    """
    if not isinstance(text, str) or not _TYPE.match(text):
        raise DdlError(f"invalid column type {text!r}: expected a Spanner type such as INT64, STRING(200), "
                       "BYTES(MAX), TIMESTAMP or ARRAY<STRING(MAX)>")
    return re.sub(r"\s+", "", text).upper()


def string_literal(text: str) -> str:
    """A GoogleSQL string literal holding exactly ``text``.

    >>> string_literal("it's")
    "'it\\\\'s'"
    """
    if not isinstance(text, str) or any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise DdlError(f"invalid literal {text!r}: control characters are not allowed")
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# --- column definitions ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ColumnDef:
    """A plain column of a new table (``commit_timestamp=True`` adds allow_commit_timestamp).

    >>> ColumnDef("LastUpdated", "TIMESTAMP", commit_timestamp=True).sql
    '`LastUpdated` TIMESTAMP OPTIONS (allow_commit_timestamp=true)'
    """

    name: str
    type: str
    not_null: bool = False
    commit_timestamp: bool = False

    def __post_init__(self) -> None:
        validate_identifier(self.name, "column")
        object.__setattr__(self, "type", column_type(self.type))
        if self.commit_timestamp and self.type != "TIMESTAMP":
            raise DdlError(f"column {self.name} is {self.type}: only TIMESTAMP columns can hold commit timestamps")

    @property
    def sql(self) -> str:
        options = " OPTIONS (allow_commit_timestamp=true)" if self.commit_timestamp else ""
        return f"{quote_identifier(self.name)} {self.type}{' NOT NULL' if self.not_null else ''}{options}"


def commit_timestamp_column(name: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, *, not_null: bool = False) -> ColumnDef:
    """A TIMESTAMP column with ``allow_commit_timestamp=true``, for a new table."""
    return ColumnDef(name, "TIMESTAMP", not_null=not_null, commit_timestamp=True)


@dataclass(frozen=True)
class ShardSource:
    """A column the shard is computed from. Nullable columns are wrapped in COALESCE."""

    name: str
    type: str = "STRING"
    not_null: bool = False

    def __post_init__(self) -> None:
        validate_identifier(self.name, "shard source column")
        match = _SOURCE_TYPE.match(self.type) if isinstance(self.type, str) else None
        kind = match.group(1).upper() if match else None
        if kind not in _AS_STRING:
            raise DdlError(f"shard source column {self.name} is {self.type}: a shard can be computed from "
                           f"{', '.join(sorted(_AS_STRING))} columns")
        object.__setattr__(self, "type", kind)


_SOURCE_TYPE = re.compile(r"^\s*([A-Za-z0-9]+)\s*(?:\(\s*(?:MAX|[1-9][0-9]{0,6})\s*\))?\s*$", re.IGNORECASE)
#: How each source type becomes STRING for FARM_FINGERPRINT (deterministic, as generated columns require),
#: and the same conversion in Python for :meth:`ShardColumn.shard_of`.
_AS_STRING: dict[str, tuple[str, Callable[[Any], str]]] = {
    "STRING": ("{}", str),
    "BYTES": ("TO_BASE64({})", lambda v: base64.b64encode(v).decode("ascii")),
    "INT64": ("CAST({} AS STRING)", lambda v: str(int(v))),
    "BOOL": ("CAST({} AS STRING)", lambda v: "true" if v else "false"),
    "DATE": ("CAST({} AS STRING)", lambda v: v.isoformat() if isinstance(v, dt.date) else str(v)),
}


def _sources(sources: Iterable[str | ShardSource]) -> tuple[ShardSource, ...]:
    if isinstance(sources, (str, ShardSource)):
        sources = [sources]
    out = tuple(s if isinstance(s, ShardSource) else ShardSource(s) for s in sources)
    if not out:
        raise DdlError("a shard column needs at least one source column")
    names = [s.name.lower() for s in out]
    if len(set(names)) != len(names):
        raise DdlError(f"shard source columns repeat a name: {[s.name for s in out]}")
    return out


def check_shard_count(shards: int) -> int:
    """``shards`` if it can work (1..MAX_SHARDS), warning when it is outside RECOMMENDED_SHARDS."""
    if isinstance(shards, bool) or not isinstance(shards, int):
        raise DdlError(f"the shard count must be an integer, got {shards!r}")
    if not 1 <= shards <= MAX_SHARDS:
        raise DdlError(f"the shard count must be between 1 and {MAX_SHARDS:,}, got {shards:,}")
    if shards not in RECOMMENDED_SHARDS:
        warnings.warn(ShardCountWarning(
            f"{shards} shard(s): MOD(..., {shards}) gives {2 * shards - 1} shard value(s); between "
            f"{RECOMMENDED_SHARDS.start} and {RECOMMENDED_SHARDS.stop - 1} spreads writes without making the poll's "
            "shard list long"), stacklevel=3)
    return shards


@dataclass(frozen=True)
class ShardColumn:
    """A computed shard column ``INT64 AS (MOD(FARM_FINGERPRINT(<sources>), N)) STORED``.

    Sources are concatenated with ``separator`` (nullable ones in COALESCE, so a NULL does
    not make the whole shard NULL); with ``processed_column`` the shard is NULL once the
    row is marked processed, which removes it from a NULL_FILTERED index (seed 002).
    MOD keeps the sign of the fingerprint, so the values are -(N-1)..N-1.

    >>> ShardColumn("ShardId", (ShardSource("Name"),), 11).expression
    "MOD(FARM_FINGERPRINT(COALESCE(`Name`, '')), 11)"
    """

    name: str
    sources: tuple[ShardSource, ...]
    shards: int = DEFAULT_SHARDS
    processed_column: str | None = None
    separator: str = " "

    def __post_init__(self) -> None:
        validate_identifier(self.name, "shard column")
        object.__setattr__(self, "sources", _sources(self.sources))
        if self.processed_column is not None:
            validate_identifier(self.processed_column, "processed column")
        string_literal(self.separator)
        clash = {self.name.lower(), (self.processed_column or "").lower()} & {s.name.lower() for s in self.sources}
        if clash:
            raise DdlError(f"shard column {self.name} cannot be computed from itself or from its processed column")

    @property
    def fingerprint_input(self) -> str:
        """The STRING expression that is fingerprinted."""
        sep = string_literal(self.separator)
        parts = []
        for i, source in enumerate(self.sources):
            value = _AS_STRING[source.type][0].format(quote_identifier(source.name))
            last = i == len(self.sources) - 1
            term = value if last else f"{value} || {sep}"
            parts.append(term if source.not_null else f"COALESCE({term}, '')")
        return " || ".join(parts)

    @property
    def expression(self) -> str:
        """The shard value expression (without the processed-column CASE)."""
        return f"MOD(FARM_FINGERPRINT({self.fingerprint_input}), {self.shards})"

    @property
    def sql(self) -> str:
        """The column definition, for CREATE TABLE or ALTER TABLE ADD COLUMN."""
        value = self.expression
        if self.processed_column is not None:
            value = f"CASE WHEN {quote_identifier(self.processed_column)} THEN NULL ELSE {value} END"
        return f"{quote_identifier(self.name)} INT64 AS ({value}) STORED"

    @property
    def values(self) -> range:
        """Every value the column can hold: -(N-1)..N-1."""
        return range(-(self.shards - 1), self.shards)

    def shard_of(self, row: Mapping[str, Any]) -> int | None:
        """The value Spanner computes for ``row`` (column name -> Python value), computed here.

        >>> col = ShardColumn("ShardId", (ShardSource("FirstName"), ShardSource("LastName", not_null=True)), 19)
        >>> col.shard_of({"FirstName": None, "LastName": "abc"}) == fingerprint("abc") % 19
        True
        """
        if self.processed_column is not None and row.get(self.processed_column):
            return None
        text = []
        for i, source in enumerate(self.sources):
            value = row.get(source.name)
            last = i == len(self.sources) - 1
            if value is None:
                if source.not_null:
                    return None  # Spanner would compute NULL; NOT NULL columns never get here
                continue
            text.append(_AS_STRING[source.type][1](value) + ("" if last else self.separator))
        return _mod(fingerprint("".join(text)), self.shards)


def shard_column(name: str = DEFAULT_SHARD_COLUMN, sources: Iterable[str | ShardSource] = (), shards: int = DEFAULT_SHARDS,
                 *, processed_column: str | None = None, separator: str = " ") -> ShardColumn:
    """A :class:`ShardColumn`, with the shard count checked (warning outside 2..1000)."""
    return ShardColumn(name, _sources(sources), check_shard_count(shards), processed_column, separator)


def fingerprint(text: str | bytes) -> int:
    """FARM_FINGERPRINT: FarmHash Fingerprint64 of the UTF-8 bytes, as a signed INT64.

    >>> fingerprint("abc"), fingerprint("")
    (2640714258260161385, -7286425919675154353)
    """
    value = farmhash.fingerprint64(text.encode("utf-8") if isinstance(text, str) else text)
    return value - (1 << 64) if value >= 1 << 63 else value


def _mod(x: int, n: int) -> int:
    # GoogleSQL MOD takes the sign of the dividend; Python's % takes the divisor's.
    r = abs(x) % n
    return -r if x < 0 else r


# --- statements -----------------------------------------------------------------------------------

def _table(table: str) -> str:
    return quote_identifier(table, "table")


def _column(name: str) -> str:
    return quote_identifier(name, "column")


def create_table(table: str, columns: Sequence[ColumnDef | ShardColumn], primary_key: Sequence[str], *,
                 allow_hotspot: bool = False, if_not_exists: bool = False) -> str:
    """``CREATE TABLE`` with the given columns; refuses a commit-timestamp column leading the key.

    >>> create_table("T", [ColumnDef("Id", "INT64", not_null=True), commit_timestamp_column("Ts")], ["Id"])
    'CREATE TABLE `T` (\\n  `Id` INT64 NOT NULL,\\n  `Ts` TIMESTAMP OPTIONS (allow_commit_timestamp=true),\\n) PRIMARY KEY (`Id`)'
    """
    if not columns:
        raise DdlError(f"table {table} needs at least one column")
    if isinstance(primary_key, str):
        primary_key = [primary_key]
    names = {c.name.lower(): c for c in columns}
    if len(names) != len(columns):
        raise DdlError(f"table {table} has two columns with the same name")
    for key in primary_key:
        if key.lower() not in names:
            raise DdlError(f"primary key column {key} is not a column of table {table}")
    first = names[primary_key[0].lower()] if primary_key else None
    if isinstance(first, ColumnDef) and first.commit_timestamp and not allow_hotspot:
        raise HotspotError(first.name, f"the primary key of table {table}")
    body = "".join(f"  {c.sql},\n" for c in columns)
    key = ", ".join(_column(k) for k in primary_key)
    exists = "IF NOT EXISTS " if if_not_exists else ""
    return f"CREATE TABLE {exists}{_table(table)} (\n{body}) PRIMARY KEY ({key})"


def add_column(table: str, column: ColumnDef | ShardColumn, *, if_not_exists: bool = False) -> str:
    """``ALTER TABLE ... ADD COLUMN``; Spanner fills a computed column in for existing rows.

    >>> add_column("Singers", ColumnDef("Processed", "BOOL"))
    'ALTER TABLE `Singers` ADD COLUMN `Processed` BOOL'
    """
    exists = "IF NOT EXISTS " if if_not_exists else ""
    return f"ALTER TABLE {_table(table)} ADD COLUMN {exists}{column.sql}"


def add_commit_timestamp_column(table: str, column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, *, not_null: bool = False) -> str:
    """Add a new commit-timestamp column (NOT NULL only works on an empty table)."""
    return add_column(table, commit_timestamp_column(column, not_null=not_null))


def _set_commit_timestamp_option(table: str, column: str, value: str) -> str:
    return f"ALTER TABLE {_table(table)} ALTER COLUMN {_column(column)} SET OPTIONS (allow_commit_timestamp={value})"


def enable_commit_timestamp(table: str, column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN) -> str:
    """Turn an existing TIMESTAMP column into a commit-timestamp column (its values must lie in the past).

    >>> enable_commit_timestamp("Performances", "LastUpdateTime")
    'ALTER TABLE `Performances` ALTER COLUMN `LastUpdateTime` SET OPTIONS (allow_commit_timestamp=true)'
    """
    return _set_commit_timestamp_option(table, column, "true")


def disable_commit_timestamp(table: str, column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN) -> str:
    """Remove the option again (``=null``); the column stays a TIMESTAMP, with its values and nullability."""
    return _set_commit_timestamp_option(table, column, "null")


def create_index(name: str, table: str, columns: Sequence[str], *, null_filtered: bool = False, storing: Sequence[str] = (),
                 commit_timestamp_columns: Iterable[str] = (), allow_hotspot: bool = False, if_not_exists: bool = False) -> str:
    """``CREATE [NULL_FILTERED] INDEX``; refuses a commit-timestamp column as the first column.

    >>> create_index("Idx", "T", ["Ts"], commit_timestamp_columns=["Ts"])
    Traceback (most recent call last):
    ...
    watcher.errors.HotspotError: Commit-timestamp column Ts would be the first column of index Idx...
    """
    if isinstance(columns, str):
        columns = [columns]
    if isinstance(storing, str):
        storing = [storing]
    if not columns:
        raise DdlError(f"index {name} needs at least one column")
    for column in (*columns, *storing):
        validate_identifier(column, "column")
    if columns[0].lower() in {c.lower() for c in commit_timestamp_columns} and not allow_hotspot:
        raise HotspotError(columns[0], f"index {name}")
    overlap = {c.lower() for c in storing} & {c.lower() for c in columns}
    if overlap:
        raise DdlError(f"index {name} cannot store its own key column(s) {sorted(overlap)}")
    kind = "NULL_FILTERED INDEX" if null_filtered else "INDEX"
    exists = "IF NOT EXISTS " if if_not_exists else ""
    sql = (f"CREATE {kind} {exists}{quote_identifier(name, 'index')} ON {_table(table)} "
           f"({', '.join(_column(c) for c in columns)})")
    if storing:
        sql += f" STORING ({', '.join(_column(c) for c in storing)})"
    return sql


def shard_index_name(table: str, shard_column: str, commit_timestamp_column: str) -> str:
    """The default index name, ``Idx_<table>_<shard>_<commit timestamp>``."""
    name = f"Idx_{table}_{shard_column}_{commit_timestamp_column}"
    return validate_identifier(name, "index name (pass index_name= to choose a shorter one)")


def shard_index(table: str, shard_column: str = DEFAULT_SHARD_COLUMN,
                commit_timestamp_column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, *, name: str | None = None,
                storing: Sequence[str] = (), if_not_exists: bool = False) -> str:
    """The NULL_FILTERED index on (shard, commit timestamp) the poll query uses."""
    if shard_column.lower() == commit_timestamp_column.lower():
        raise HotspotError(commit_timestamp_column, f"the shard index of table {table}")
    return create_index(shard_index_name(table, shard_column, commit_timestamp_column) if name is None else name, table,
                        [shard_column, commit_timestamp_column], null_filtered=True, storing=storing,
                        commit_timestamp_columns=[commit_timestamp_column], if_not_exists=if_not_exists)


def force_index_hint(index: str) -> str:
    """The table hint that makes the poll use ``index`` (for ``TableWatcher(table_hint=...)``).

    >>> force_index_hint("Idx_Singers_ShardId_LastUpdated")
    '@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}'
    """
    return f"@{{FORCE_INDEX={validate_identifier(index, 'index')}}}"


def shard_provider(column: str, shards: int) -> FixedShardProvider:
    """A FixedShardProvider over every value of an ``N``-shard column (-(N-1)..N-1)."""
    return FixedShardProvider(column, range(-(shards - 1), shards))


# --- everything at once ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ShardedPolling:
    """The statements to run (in order) and the watcher settings that go with them."""

    table: str
    statements: tuple[str, ...]
    shard_column: ShardColumn
    commit_timestamp_column: str
    index: str

    @property
    def shard_provider(self) -> FixedShardProvider:
        return shard_provider(self.shard_column.name, self.shard_column.shards)

    @property
    def table_hint(self) -> str:
        return force_index_hint(self.index)

    def watcher_options(self) -> dict[str, Any]:
        """Keyword arguments for ``TableWatcher(database, table, **options)``."""
        return {"shard_provider": self.shard_provider, "table_hint": self.table_hint,
                "commit_timestamp_column": self.commit_timestamp_column}


#: What to do about the commit-timestamp column of an existing table.
_COMMIT_TIMESTAMP_STEPS: dict[str, Callable[[str, str], str | None]] = {
    "existing": lambda table, column: None,
    "add": lambda table, column: add_commit_timestamp_column(table, column),
    "convert": enable_commit_timestamp,
}


def sharded_polling(table: str, sources: Iterable[str | ShardSource], *, shards: int = DEFAULT_SHARDS,
                    commit_timestamp_column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN, commit_timestamp: str = "existing",
                    shard_column_name: str = DEFAULT_SHARD_COLUMN, processed_column: str | None = None,
                    add_processed_column: bool = True, storing: Sequence[str] = (), index_name: str | None = None,
                    separator: str = " ") -> ShardedPolling:
    """Make an existing table poll-friendly: commit timestamp, shard column, NULL_FILTERED index.

    Args:
        table: the table to change.
        sources: the columns the shard is computed from (names, or :class:`ShardSource` for
            NOT NULL or non-STRING columns).
        shards: N of ``MOD(..., N)``; the column takes the 2N-1 values -(N-1)..N-1.
        commit_timestamp_column: the commit-timestamp column of the table.
        commit_timestamp: ``"existing"`` (it is one already), ``"add"`` (add it) or
            ``"convert"`` (set allow_commit_timestamp on an existing TIMESTAMP column).
        shard_column_name: the computed column's name.
        processed_column: with a name, the shard is NULL while this BOOL column is true, and
            pruning marks rows processed instead of nulling their commit timestamp.
        add_processed_column: add ``processed_column`` (False when the table has it already).
        storing: columns the index stores (a poll reading only these never touches the table).
        index_name: the index name (default ``Idx_<table>_<shard column>_<commit timestamp column>``).
        separator: the text between source values in the fingerprinted string.
    """
    if commit_timestamp not in _COMMIT_TIMESTAMP_STEPS:
        raise DdlError(f"commit_timestamp must be one of {sorted(_COMMIT_TIMESTAMP_STEPS)}, got {commit_timestamp!r}")
    validate_identifier(table, "table")
    validate_identifier(commit_timestamp_column, "commit-timestamp column")
    shard = shard_column(shard_column_name, sources, shards, processed_column=processed_column, separator=separator)
    if commit_timestamp_column.lower() in {s.name.lower() for s in shard.sources}:
        raise DdlError(f"the shard cannot be computed from the commit-timestamp column {commit_timestamp_column}")
    index = shard_index_name(table, shard.name, commit_timestamp_column) if index_name is None else index_name
    steps = [_COMMIT_TIMESTAMP_STEPS[commit_timestamp](table, commit_timestamp_column)]
    if processed_column is not None and add_processed_column:
        steps.append(add_column(table, ColumnDef(processed_column, "BOOL")))
    steps.append(add_column(table, shard))
    steps.append(shard_index(table, shard.name, commit_timestamp_column, name=index, storing=storing))
    return ShardedPolling(table, tuple(s for s in steps if s), shard, commit_timestamp_column, index)


def sharded_table(table: str, columns: Sequence[ColumnDef], primary_key: Sequence[str], sources: Iterable[str | ShardSource],
                  *, shards: int = DEFAULT_SHARDS, commit_timestamp_column: str = DEFAULT_COMMIT_TIMESTAMP_COLUMN,
                  shard_column_name: str = DEFAULT_SHARD_COLUMN, processed_column: str | None = None,
                  storing: Sequence[str] = (), index_name: str | None = None, separator: str = " ",
                  allow_hotspot: bool = False) -> ShardedPolling:
    """A new table with a commit-timestamp column, a shard column and the shard index.

    ``columns`` are the table's own columns; the commit-timestamp column (and the
    processed column) are added when ``columns`` does not declare them.
    """
    columns = list(columns)
    declared = {c.name.lower(): c for c in columns}
    ts = declared.get(commit_timestamp_column.lower())
    if ts is None:
        ts = ColumnDef(commit_timestamp_column, "TIMESTAMP", commit_timestamp=True)
        columns.append(ts)
    if not ts.commit_timestamp:
        raise DdlError(f"column {ts.name} of table {table} must be a commit-timestamp column (commit_timestamp=True)")
    if processed_column is not None and processed_column.lower() not in declared:
        columns.append(ColumnDef(processed_column, "BOOL"))
    shard = shard_column(shard_column_name, sources, shards, processed_column=processed_column, separator=separator)
    missing = [s.name for s in shard.sources if s.name.lower() not in declared]
    if missing:
        raise DdlError(f"shard source column(s) {missing} are not columns of table {table}")
    index = shard_index_name(table, shard.name, ts.name) if index_name is None else index_name
    statements = (create_table(table, [*columns, shard], primary_key, allow_hotspot=allow_hotspot),
                  shard_index(table, shard.name, ts.name, name=index, storing=storing))
    return ShardedPolling(table, statements, shard, ts.name, index)
