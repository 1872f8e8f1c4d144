"""The computed shard column: ``INT64 AS (MOD(FARM_FINGERPRINT(<columns>), N)) STORED``.

Spanner fills the column in for every writer, old or new, without the writers mentioning it; a poll then reads one range of the shard index per shard value instead of
the whole table. :meth:`ShardColumn.shard_of` computes the same value in Python, and
:func:`shard_provider` lists every value for the watcher.

In a PostgreSQL database the column is ``bigint GENERATED ALWAYS AS (MOD(spanner.farm_fingerprint(...), N))
STORED`` and non-text sources are cast to ``varchar``; the values are the same in both dialects.

Example:
    >>> shard_column("ShardId", ["FirstName"], 7).sql
    "`ShardId` INT64 AS (MOD(FARM_FINGERPRINT(COALESCE(`FirstName`, '')), 7)) STORED"
    >>> print(shard_column("ShardId", ["FirstName"], 7).definition(POSTGRESQL))
    "ShardId" bigint GENERATED ALWAYS AS (MOD(spanner.farm_fingerprint(COALESCE("FirstName", '')), 7)) STORED
    >>> shard_provider("ShardId", 3)
    FixedShardProvider('ShardId', [-2, -1, 0, 1, 2])
"""

from __future__ import annotations

import base64
import datetime as dt
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import farmhash  # type: ignore[import-untyped]

from ...capture.shards import FixedShardProvider
from ...dialects.base import GOOGLE_SQL, POSTGRESQL, Dialect  # noqa: F401 (POSTGRESQL: the doctests)
from ...dialects.ddl import DDL_SQL, as_text, column_definition_type, google_type_name
from ...errors import DdlError
from ...sqlnames import validate_identifier
from .columns import string_literal

#: The Java library's sample shard count: MOD(..., 19) gives the 37 values -18..18.
DEFAULT_SHARDS = 19
#: Shard counts outside this range work but are rarely what one wants (a warning says so).
RECOMMENDED_SHARDS = range(2, 1001)
#: Above this, the shard provider's parameter list (2N-1 values) gets unreasonable.
MAX_SHARDS = 1_000_000
DEFAULT_SHARD_COLUMN = "ShardId"


class ShardCountWarning(UserWarning):
    """The shard count works, but is outside :data:`RECOMMENDED_SHARDS`."""


# --- sources -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ShardSource:
    """A column the shard is computed from. Nullable columns are wrapped in COALESCE.

    >>> ShardSource("Id", "bigint", not_null=True).type, ShardSource("Name", "STRING(200)").type
    ('INT64', 'STRING')
    """

    name: str
    type: str = "STRING"
    not_null: bool = False

    def __post_init__(self) -> None:
        validate_identifier(self.name, "shard source column")
        written = (google_type_name(self.type) or self.type) if isinstance(self.type, str) else self.type
        match = _SOURCE_TYPE.match(written) if isinstance(written, str) else None
        kind = match.group(1).upper() if match else None
        if kind not in _AS_STRING:
            raise DdlError(f"shard source column {self.name} is {self.type}: a shard can be computed from "
                           f"{', '.join(sorted(_AS_STRING))} columns")
        object.__setattr__(self, "type", kind)


_SOURCE_TYPE = re.compile(r"^\s*([A-Za-z0-9]+)\s*(?:\(\s*(?:MAX|[1-9][0-9]{0,6})\s*\))?\s*$", re.IGNORECASE)
#: How each source type becomes text in Python, as the database's conversion for FARM_FINGERPRINT makes it
#: (:data:`watcher.dialects.ddl.DDL_SQL` ``as_text``), for :meth:`ShardColumn.shard_of`.
_AS_STRING: dict[str, Callable[[Any], str]] = {
    "STRING": str,
    "BYTES": lambda v: base64.b64encode(v).decode("ascii"),
    "INT64": lambda v: str(int(v)),
    "BOOL": lambda v: "true" if v else "false",
    "DATE": lambda v: v.isoformat() if isinstance(v, dt.date) else str(v),
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


# --- the column ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ShardColumn:
    """A computed shard column ``INT64 AS (MOD(FARM_FINGERPRINT(<sources>), N)) STORED``.

    Sources are concatenated with ``separator`` (nullable ones in COALESCE, so a NULL does
    not make the whole shard NULL); with ``processed_column`` the shard is NULL once the
    row is marked processed, which removes it from a NULL_FILTERED index.
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
        """The STRING expression that is fingerprinted, in GoogleSQL."""
        return self.fingerprint_input_in(GOOGLE_SQL)

    def fingerprint_input_in(self, dialect: Dialect) -> str:
        """The text expression that is fingerprinted, in ``dialect``.

        >>> print(ShardColumn("S", (ShardSource("Id", "INT64", not_null=True), ShardSource("N")), 3).fingerprint_input_in(POSTGRESQL))
        CAST("Id" AS varchar) || ' ' || COALESCE("N", '')
        """
        sep = string_literal(self.separator, dialect)
        parts = []
        for i, source in enumerate(self.sources):
            value = as_text(dialect, source.type, dialect.quote(source.name, "column"), source.name)
            last = i == len(self.sources) - 1
            term = value if last else f"{value} || {sep}"
            parts.append(term if source.not_null else f"COALESCE({term}, '')")
        return " || ".join(parts)

    @property
    def expression(self) -> str:
        """The shard value expression (without the processed-column CASE), in GoogleSQL."""
        return self.expression_in(GOOGLE_SQL)

    def expression_in(self, dialect: Dialect) -> str:
        """The shard value expression (without the processed-column CASE), in ``dialect``.

        >>> print(ShardColumn("ShardId", (ShardSource("Name"),), 11).expression_in(POSTGRESQL))
        MOD(spanner.farm_fingerprint(COALESCE("Name", '')), 11)
        """
        return f"MOD({DDL_SQL[dialect.name].fingerprint.format(self.fingerprint_input_in(dialect))}, {self.shards})"

    @property
    def sql(self) -> str:
        """The column definition in GoogleSQL, for CREATE TABLE or ALTER TABLE ADD COLUMN."""
        return self.definition(GOOGLE_SQL)

    def definition(self, dialect: Dialect) -> str:
        """The column definition in ``dialect``, for CREATE TABLE or ALTER TABLE ADD COLUMN."""
        value = self.expression_in(dialect)
        if self.processed_column is not None:
            value = f"CASE WHEN {dialect.quote(self.processed_column, 'column')} THEN NULL ELSE {value} END"
        return DDL_SQL[dialect.name].generated_column.format(
            name=dialect.quote(self.name, "column"), type=column_definition_type(dialect, "INT64"), expression=value)

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
            text.append(_AS_STRING[source.type](value) + ("" if last else self.separator))
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


def shard_provider(column: str, shards: int) -> FixedShardProvider:
    """A FixedShardProvider over every value of an ``N``-shard column (-(N-1)..N-1)."""
    return FixedShardProvider(column, range(-(shards - 1), shards))
