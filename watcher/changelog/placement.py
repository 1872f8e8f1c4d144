"""Which partition of the per-key window a table's rows go to: few files in each changelog folder.

The changelog is written in folders by table and commit date (:mod:`.changelog_files`), and each
task of the write puts a file into every folder it holds rows of. Rows hashed by (table, key)
put every table into every task, so a run wrote tasks x tables x dates files, and a Parquet
file costs its writer, its column buffers and its footer whatever it holds (benchmarks/RESULTS.md,
changelog_job). A run knows each table's staged bytes before it parses a line, so
it places the tables instead: a table gets as many of the shuffle's partitions as its share of
the input needs, its keys hashed over them; tables smaller than a partition's share are kept
whole; the pieces go to the partitions largest first, each to the least filled (so no
partition ends more than one piece above the others). A key's rows still meet in one
partition, which is all the window needs.

Spark puts a row in partition ``pmod(hash(p), n)`` of a shuffle by a column ``p``. A piece's
``p`` is a number whose hash lands in the partition chosen for it (:func:`partition_value`);
rows of tables the plan does not name (more tables than :data:`MAX_PLACED`, a table whose
folder name is not its own) get ``hash(table_name, keys)``, which spreads them by key as before.

Example:
    >>> placed = plan({"Big": 600, "Small": 100, "Tiny": 50}, 4)
    >>> placed.pieces["Big"], placed.pieces["Small"], placed.pieces["Tiny"]
    ((0, 1, 2, 3), (0,), (1,))
    >>> placed.loads()
    [250, 200, 150, 150]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..staging.contract import TABLE_FOLDER_PREFIX, split_batch_name, table_folder
from .classify import sql_literal

#: The column the window's rows are shuffled by (an INT).
COLUMN = "_p"
#: At most this many tables are placed by name (the largest); the others are spread by key. Each
#: placed table is one branch of a CASE expression evaluated for every row.
MAX_PLACED = 64
#: Spark's seed for ``hash`` and for shuffle partitioning.
_SEED = 42
#: Where no plan is given: rows spread by table and key.
SPREAD_SQL = "hash(table_name, keys)"


def spark_hash_int(value: int, seed: int = _SEED) -> int:
    """Spark's ``hash`` of an INT ``value`` (Murmur3, x86 32-bit, of its four bytes), as a signed int.

    >>> spark_hash_int(0), spark_hash_int(1), spark_hash_int(-1)
    (933211791, -559580957, -1604776387)
    """
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    k = (value & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF
    k = rotl(k, 15) * 0x1B873593 & 0xFFFFFFFF
    h = rotl(seed ^ k, 13)
    h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    h ^= 4  # the length in bytes
    h ^= h >> 16
    h = h * 0x85EBCA6B & 0xFFFFFFFF
    h ^= h >> 13
    h = h * 0xC2B2AE35 & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_value(partition: int, partitions: int) -> int:
    """The smallest non-negative INT that a shuffle into ``partitions`` puts in ``partition``.

    >>> [partition_value(p, 4) for p in range(4)]
    [12, 6, 2, 0]
    >>> spark_hash_int(12) % 4
    0
    """
    if not 0 <= partition < partitions:
        raise ValueError(f"partition {partition} is not one of 0..{partitions - 1}")
    return _partition_values(partitions)[partition]


@functools.cache
def _partition_values(partitions: int) -> tuple[int, ...]:
    """The smallest INT of each partition, found in one sweep (about n log n hashes for n partitions)."""
    found: dict[int, int] = {}
    value = 0
    while len(found) < partitions:
        found.setdefault(spark_hash_int(value) % partitions, value)
        value += 1
    return tuple(found[p] for p in range(partitions))


@dataclass(frozen=True)
class Placement:
    """Where each placed table's rows go: its pieces' partitions (a key's piece: its hash, modulo)."""

    partitions: int
    pieces: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    weights: Mapping[str, int] = field(default_factory=dict)

    def sql(self) -> str:
        """SQL: the INT to shuffle a window row by (:data:`COLUMN`)."""
        if not self.pieces:
            return SPREAD_SQL
        branches = []
        for table, parts in sorted(self.pieces.items()):
            values = [str(partition_value(p, self.partitions)) for p in parts]
            chosen = values[0] if len(values) == 1 else (
                f"element_at(array({', '.join(values)}), pmod(hash(keys), {len(values)}) + 1)")
            branches.append(f"WHEN {sql_literal(table)} THEN {chosen}")
        return f"CASE table_name {' '.join(branches)} ELSE {SPREAD_SQL} END"

    def loads(self) -> list[int]:
        """The planned bytes of each partition (tests and logs)."""
        loads = [0] * self.partitions
        for table, parts in self.pieces.items():
            for p in parts:
                loads[p] += self.weights.get(table, 0) // len(parts)
        return loads


def plan(weights: Mapping[str, int], partitions: int, *, split: bool = True) -> Placement:
    """Place the tables of ``weights`` (bytes each) into ``partitions``; ``split``: a table larger
    than a partition's share is spread by key over several (else every table stays whole).

    >>> plan({"A": 10, "B": 10, "C": 10}, 2, split=False).pieces
    {'A': (0,), 'B': (1,), 'C': (0,)}
    """
    if partitions < 1:
        raise ValueError(f"partitions must be at least 1, got {partitions}")
    largest = sorted(weights.items(), key=lambda item: (-item[1], item[0]))[:MAX_PLACED]
    total = sum(max(w, 0) for _, w in largest)
    share = total / partitions if total else 1
    pieces: list[tuple[int, str]] = []
    for table, weight in largest:
        count = min(partitions, max(1, math.ceil(weight / share - 1e-9))) if split else 1
        pieces += [(max(weight, 0) // count, table)] * count
    loads = [0] * partitions
    placed: dict[str, list[int]] = {}
    # Largest piece first, each into the least filled partition not holding the table already.
    for size, table in sorted(pieces, key=lambda item: (-item[0], item[1])):
        taken = placed.setdefault(table, [])
        target = min((p for p in range(partitions) if p not in taken), key=lambda p: (loads[p], p))
        taken.append(target)
        loads[target] += size
    return Placement(partitions, {t: tuple(sorted(ps)) for t, ps in placed.items()}, dict(largest))


def staged_bytes(files: Iterable[Any], known_tables: Iterable[str]) -> dict[str, int]:
    """Bytes of staged input per table: a file's table is its folder's (``table=<T>``); a folder is
    mapped back to the table of ``known_tables`` it belongs to, else named as it reads.

    >>> from types import SimpleNamespace as F
    >>> staged_bytes([F(uri="/s/table=A/b1.jsonl", length=5), F(uri="/s/table=A/b2.jsonl", length=7),
    ...               F(uri="/s/table=sch_T/b.jsonl", length=3)], ["sch.T"])
    {'A': 12, 'sch.T': 3}
    """
    by_folder = {table_folder(t): t for t in known_tables}
    out: dict[str, int] = {}
    for f in files:
        folder = split_batch_name(f.uri)[0]
        table = by_folder.get(folder, folder[len(TABLE_FOLDER_PREFIX):])
        out[table] = out.get(table, 0) + int(f.length)
    return out


def shuffle_partitions(spark: Any) -> int:
    """The partitions Spark gives a shuffle by a column without a number (as Spark counts them)."""
    conf = spark.conf
    if (conf.get("spark.sql.adaptive.enabled", "true").lower() == "true"
            and conf.get("spark.sql.adaptive.coalescePartitions.enabled", "true").lower() == "true"):
        initial = conf.get("spark.sql.adaptive.coalescePartitions.initialPartitionNum", None)
        if initial:
            return int(initial)
    return int(conf.get("spark.sql.shuffle.partitions", "200"))
