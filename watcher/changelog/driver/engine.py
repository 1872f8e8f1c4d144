"""A small run of the changelog job on the driver: read, classify, group, and write as Spark would.

:func:`prepare` does everything that only reads (the batch files, the state of their keys, the
per-key window, the transaction groups, the tally the run commits with) and raises
:class:`~watcher.changelog.driver.Ineligible` where the run is not one the engine does exactly;
:meth:`Prepared.write` then writes the run's changelog and state files, in Spark's Parquet types
and folder layout, for :mod:`..run` to commit. The rules and their limits: :mod:`watcher.changelog.driver`.

Example:
    >>> changelog_schema().names[:3]
    ['change_id', 'keys', 'key_columns']
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ...staging.contract import split_batch_name, table_folder
from .. import current_state, records, staging_reader, tally
from ..arrow_fs import ArrowFS
from ..arrow_merge import arrow_schema
from ..changelog_files import PARTITION_COLUMNS
from ..files import FileEntry
from ..grouping import commit_group
from ..manifest import PARTIAL_ROWS, Manifest
from . import MAX_BYTES, MAX_STATE_ROWS, Ineligible
from .staged import StagedRow
from .window import Classified, StateRow, classify

#: Table names whose partition folder Spark spells as the name itself.
_PLAIN_TABLE = re.compile(r"^[A-Za-z0-9_.-]+$")
#: Timestamps are built as microseconds, what Spark's cast of the commit timestamp keeps.
_UNIT = "us"
_EPOCH = dt.datetime(1970, 1, 1)  # naive: UTC, as Spark's INT96 timestamps


def changelog_schema() -> Any:
    """The Arrow schema of a changelog file (the partition columns are its folders)."""
    return arrow_schema(records.CHANGELOG_FIELDS, PARTITION_COLUMNS, unit=_UNIT)


@dataclass
class Prepared:
    """A run the driver engine does: what it writes, and what the run commits."""

    rows: list[Classified]
    groups: dict[str, tuple[int, int]]  # change_id -> (record_sequence, number_of_records_in_group)
    tally: tally.Tally
    stats: list[Any]
    #: The run's tables that have a state: each gets a delta (the engine takes no run that rewrites one whole).
    delta_tables: set[str]

    def write(self, warehouse: ArrowFS, version: int) -> None:
        """Write the run's changelog files and state layer as run ``version`` (nothing visible before the commit)."""
        schema = changelog_schema()
        parts: dict[tuple[str, str], list[Classified]] = {}
        for c in self.rows:
            if not c.is_dup:
                parts.setdefault((c.row.table, c.commit_date), []).append(c)
        for (table, date), part in sorted(parts.items()):
            warehouse.write_parquet(_table(_changelog_columns(part, self.groups, version), schema),
                                    f"changelog/table_name={table}/commit_date={date}/{_file_name()}")
        finals = [c for c in self.rows if c.is_final]
        for table in sorted({c.row.table for c in finals} - self.delta_tables):  # its first state: a base
            rows = [c for c in finals if c.row.table == table]
            warehouse.write_parquet(_table(_state_columns(rows, version), _state_schema(("table_name",))),
                                    f"{current_state.version_dir(version)}/table_name={table}/{_file_name()}")
        deltas = [c for c in finals if c.row.table in self.delta_tables]
        if deltas:
            warehouse.write_parquet(_table(_state_columns(deltas, version), _state_schema()),
                                    f"{current_state.deltas_dir(version)}/{_file_name()}")


def _state_schema(leave_out: Sequence[str] = ()) -> Any:
    return arrow_schema(records.STATE_FIELDS, leave_out, unit=_UNIT)


def _table(columns: Mapping[str, list[Any]], schema: Any) -> Any:
    import pyarrow as pa

    return pa.table([pa.array(columns[f.name], f.type) for f in schema], schema=schema)


def _file_name() -> str:
    return f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"


def _row_columns(rows: list[Classified], version: int) -> dict[str, list[Any]]:
    """The columns the changelog and the state share."""
    r = [c.row for c in rows]
    return {
        "keys": [x.keys for x in r], "key_columns": [x.key_columns for x in r], "column_types": [x.types_json for x in r],
        "new_values": [x.json for x in r], "commit_timestamp": [x.commit_timestamp for x in r],
        # Spark's cast keeps microseconds, dropping the rest
        "commit_ts": [_EPOCH + dt.timedelta(microseconds=x.commit_nanos // 1000) for x in r],
        "mod_type": [c.mod_type for c in rows], "change_id": [c.change_id for c in rows],
        "run_version": [version] * len(rows),
    }


def _changelog_columns(rows: list[Classified], groups: Mapping[str, tuple[int, int]], version: int) -> dict[str, list[Any]]:
    r = [c.row for c in rows]
    return {
        **_row_columns(rows, version),
        "old_values": [c.old_values for c in rows], "value_capture_type": [records.VALUE_CAPTURE_TYPE] * len(rows),
        "transaction_group": [commit_group(x.commit_timestamp) for x in r],
        "record_sequence": [groups[c.change_id][0] for c in rows],
        "number_of_records_in_group": [groups[c.change_id][1] for c in rows],
        "read_timestamp": [x.read_timestamp for x in r],
        "read_method": ["cdc" if x.read_method is None else x.read_method for x in r],  # "" stays, as SQL's coalesce keeps it
        "shard": [x.shard for x in r], "watcher_id": [x.watcher_id for x in r], "batch_id": [x.batch_id for x in r],
        **{name: [None] * len(rows) for name in records.STREAM_CHANGELOG_COLUMNS},
    }


def _state_columns(rows: list[Classified], version: int) -> dict[str, list[Any]]:
    r = [c.row for c in rows]
    return {
        **_row_columns(rows, version),
        "table_name": [x.table for x in r], "is_deleted": [x.in_mod_type == "DELETE" for x in r],
        "version_seq": [None] * len(rows),
    }


def number_groups(rows: list[Classified]) -> dict[str, tuple[int, int]]:
    """Each written row's (record_sequence, number_of_records_in_group): within its commit
    timestamp's group, by table and key (:func:`..grouping.add_grouping`, for groups no earlier run wrote)."""
    by_group: dict[str, list[Classified]] = {}
    for c in rows:
        if not c.is_dup:
            by_group.setdefault(c.row.commit_timestamp, []).append(c)
    out: dict[str, tuple[int, int]] = {}
    for members in by_group.values():
        members.sort(key=lambda c: (c.row.table, c.row.keys))
        for n, c in enumerate(members):
            out[c.change_id] = (n, len(members))
    return out


def _tally(rows: list[Classified]) -> tally.Tally:
    """The tally Spark's aggregation would give for these rows (:func:`..tally.tally`)."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for c in rows:
        x = c.row
        key = (x.batch, x.table, c.commit_date, c.mod_type, c.is_dup, x.shard, x.read_method)
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"_src": 1, "batch": x.batch, "table_name": x.table, "commit_date": c.commit_date,
                               "mod_type": c.mod_type, "_is_dup": c.is_dup, "_is_late": False, "shard": x.shard,
                               "read_method": x.read_method, "_replaces": False, "n": 0, "bad": 0, "seqs": [],
                               "max_v": x.v, "reads": [], "commits": [], "finals": 0, "partials": 0}
        g["n"] += 1
        g["seqs"].append(x.seq)
        g["max_v"] = max(g["max_v"], x.v)
        if x.read_nanos is not None:
            g["reads"].append(x.read_nanos)
        g["commits"].append(x.commit_nanos)
        g["finals"] += c.is_final
    out = []
    for g in groups.values():
        seqs, reads, commits = g.pop("seqs"), g.pop("reads"), g.pop("commits")
        squares = [s * s for s in seqs if 0 <= s <= 2_000_000_000]
        total = sum(seqs)
        g.update(min_seq=min(seqs), max_seq=max(seqs), sum_seq=total if -2**63 <= total < 2**63 else None,
                 sum_seq2=sum(squares) if squares else None, read_ts_ns=max(reads) if reads else None,
                 max_commit_ns=max(commits), min_commit_ns=min(commits), stream_mark_ns=None,
                 new_finals=g["finals"])
        out.append(g)
    return tally.from_groups(out)


#: What the window needs of a state row (the others describe the state row itself).
_STATE_COLUMNS = ["keys", "commit_timestamp", "is_deleted", "new_values", "version_seq"]


def _read_layers(store: ArrowFS, base: Manifest, tables: set[str]) -> dict[str, list[Any]]:
    """Each of ``tables``' state layers (oldest first, :data:`_STATE_COLUMNS`), as pyarrow reads them.

    Layers the manifest counts no rows in are left out, as the job's reader leaves them
    (:func:`..current_state.load_layers`); a delta folder holds the deltas of all of its run's tables.
    """
    import pyarrow.compute as pc

    deltas: dict[int, Any] = {}
    out: dict[str, list[Any]] = {}
    for table in sorted(tables):
        out[table] = []
        for n, (version, count) in enumerate(current_state.layer_rows(base.tables[table])):
            if count is not None and count <= 0:
                continue
            if n == 0:
                read = store.read_parquet(f"{current_state.version_dir(version)}/table_name={table}",
                                          columns=_STATE_COLUMNS, threads=True)
            else:
                if version not in deltas:
                    deltas[version] = store.read_parquet(current_state.deltas_dir(version),
                                                         columns=["table_name", *_STATE_COLUMNS], threads=True)
                read = deltas[version]
                if read is not None:
                    read = read.filter(pc.equal(read.column("table_name"), table))
            if read is not None:
                out[table].append(read)
    return out


def _state(layers: Mapping[str, list[Any]], keys: set[tuple[str, str]]) -> dict[tuple[str, str], StateRow]:
    """The newest state row of each of ``keys`` over its table's ``layers``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    wanted = pa.array(sorted({k for _, k in keys}), pa.string())
    found: dict[tuple[str, str], list[tuple[str, bool | None, str | None]]] = {}
    for table, reads in layers.items():
        for read in reads:
            read = read.filter(pc.is_in(read.column("keys"), value_set=wanted))
            if read.num_rows and pc.any(pc.is_valid(read.column("version_seq"))).as_py():
                raise Ineligible("state rows with version sequences (history tables)", table)
            for k, ts, deleted, values in zip(*(read.column(c).to_pylist() for c in _STATE_COLUMNS[:4]), strict=True):
                if (table, k) in keys:
                    found.setdefault((table, k), []).append((ts, deleted, values))
    state: dict[tuple[str, str], StateRow] = {}
    for key, rows in found.items():
        if any(ts is None for ts, _, _ in rows):
            raise Ineligible("a state row without a commit timestamp", f"{key[0]} {key[1]}")
        newest = max(ts for ts, _, _ in rows)
        at_newest = {(deleted, values) for ts, deleted, values in rows if ts == newest}
        deleted, values = next(iter(at_newest))
        if len(at_newest) > 1 or deleted is None or values is None:
            raise Ineligible("a key's state rows disagree or lack values", f"{key[0]} {key[1]}")
        state[key] = StateRow(newest, deleted, values)
    return state


def _layers(read: Callable[[], dict[str, list[Any]]]) -> dict[str, list[Any]]:
    """``read()``'s layers; a layer pyarrow cannot read as the engine asks (e.g. one written before
    a column existed, which Spark's reader fills with nulls) leaves the run to Spark."""
    try:
        return read()
    except (OSError, ValueError, KeyError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise Ineligible(f"state layers pyarrow does not read as the job does ({exc})") from exc


def _delta_tables(base: Manifest, tables: set[str], input_bytes: int, compacted_apart: bool) -> set[str]:
    """Those of ``tables`` with a state, which the run writes as deltas (Ineligible: one is rewritten whole)."""
    with_state = {t for t in tables if base.tables.get(t, {}).get("state_version")}
    whole = {t for t in with_state
             if current_state.rewrite_whole(base.tables[t], input_bytes, compacted_apart=compacted_apart)}
    if whole:
        raise Ineligible("a table whose state the run rewrites whole", ", ".join(sorted(whole)))
    if sum(current_state.size(base.tables[t]) for t in with_state) > MAX_STATE_ROWS:
        raise Ineligible(f"more than {MAX_STATE_ROWS} state rows")
    return with_state


#: Reads a run's batches on the driver as change rows, raising Ineligible where it cannot
#: (:meth:`..batch_sources.BatchSource.driver_rows`).
RowReader = Callable[[list[FileEntry]], list[StagedRow]]


def prepare(files: list[FileEntry], read_rows: RowReader, store: ArrowFS, base: Manifest, markers: Mapping[str, str],
            soft_delete: Mapping[str, str], *, compacted_apart: bool = False) -> Prepared:
    """Read (``read_rows``) and classify a run's batch ``files`` (see the module docstring); raises Ineligible.

    ``compacted_apart``: a compactor merges the state's layers outside the runs
    (:func:`..current_state.rewrite_whole`)."""
    input_bytes = sum(f.length for f in files)
    if input_bytes > MAX_BYTES:
        raise Ineligible(f"more than {MAX_BYTES} bytes of staged input")
    # The state of the tables the batches' folders name is read (pyarrow, off the GIL) while the
    # batches are parsed (Python); a table only the records name is read after.
    folders = {split_batch_name(f.uri)[0] for f in files}
    named = _delta_tables(base, {t for t in base.tables if table_folder(t) in folders}, input_bytes, compacted_apart)
    pool = ThreadPoolExecutor(1, thread_name_prefix="driver-state")
    try:
        reading = pool.submit(_read_layers, store, base, named)
        rows = read_rows(files)
        tables = {r.table for r in rows}
        for table in sorted(tables):
            if not _PLAIN_TABLE.match(table):
                raise Ineligible("a table name Spark escapes in folder names", table)
            if table in soft_delete:
                raise Ineligible("a soft-delete column", table)
            if base.tables.get(table, {}).get(PARTIAL_ROWS):
                raise Ineligible("a table with partial rows", table)
        state_tables = _delta_tables(base, tables, input_bytes, compacted_apart)
        layers = {t: reads for t, reads in _layers(reading.result).items() if t in state_tables}
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # a refused run need not wait for the read
    layers.update(_layers(lambda: _read_layers(store, base, state_tables - set(layers))))
    keys = {(r.table, r.keys) for r in rows if r.table in state_tables}
    state = _state(layers, keys) if keys else {}
    classified = classify(rows, state, markers)
    counted = _tally(classified)
    stats, bad = staging_reader.check_batches(counted.batches, files)
    if bad:
        raise Ineligible("a batch the job sets aside", ", ".join(sorted(bad)))
    return Prepared(classified, number_groups(classified), counted, stats, state_tables)
