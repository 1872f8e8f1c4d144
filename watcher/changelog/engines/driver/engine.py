"""The driver engine: a small run computed in the driver's Python and written with delta-rs, no Spark job.

A Spark job has a fixed cost whatever it holds, and a run on Delta is several (the read, the
window, the tally, an append, a MERGE with its own jobs), which dominates a run of a few changes. A
small run of polled rows is done here instead, from the same rules as Spark's plan: the batch
files parsed as Spark's reader reads them (:mod:`...input.staged`), each key's state row read from
``current_state`` (as the table held it before the run, by time travel after a crash), each new
row classified by :data:`...rules.classify.RULES` with its old values and change id (:mod:`.window`),
the transaction groups numbered, the tally and batch checks of :mod:`..tally` and
:mod:`...input.staging_reader`; then the parts written as the run: the changelog appended, the state
MERGEd on (source, table, keys) (appended when none of the run's keys is in it: all inserts), the
watermarks as Spark's engine writes them.

:meth:`DriverEngine.prepare` raises :class:`.Ineligible` (naming why) before anything is
written for a run it cannot do exactly as Spark would: more than :data:`MAX_BYTES` of input, a
folder reached through Hadoop's filesystem, staged text Spark would render differently, change-stream, history or
partial rows, a late change, a soft-delete column, an update off the old values' fast path, a
batch to set aside, a transaction group an earlier run wrote rows of. The orchestration then runs
Spark's engine (:mod:`...run`). ``tests/changelog/test_driver_engine.py`` runs the same inputs through
both and compares every table.

Example:
    >>> MAX_BYTES
    16777216
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...input import Ineligible, staging_reader
from ...input.batch_sources import BatchSource
from ...rules import records
from ...rules.grouping import commit_group
from ...tables import arrow_rows, layout, watermark_table
from ...tables.ledger import Ledger, Run
from ...tables.readers import arrow_table, rows_holding
from ...tables.source import COLUMNS as SOURCE_COLUMNS
from ...tables.source import Source
from ..base import Engine, Outcome, PreparedRun, all_newer, hold
from ..tally import Tally, from_groups
from .window import Classified, StateRow, classify

#: Staged input (bytes) up to which a run is done on the driver.
MAX_BYTES = 16 * 1024 * 1024


class DriverEngine(Engine):
    """Small runs of a staging folder, into the ledger's warehouse, as rows of ``origin``."""

    name = "driver"

    def __init__(self, source: BatchSource, ledger: Ledger, *, soft_delete: Mapping[str, str], origin: Source,
                 markers: Mapping[str, str]) -> None:
        self.source, self.ledger = source, ledger
        self.soft_delete, self.origin, self.markers = dict(soft_delete), origin, dict(markers)

    def prepare(self, run: Run, batches: list[Any]) -> DriverRun:
        """The run over ``batches``, or :class:`.Ineligible` when Spark must do it (nothing written)."""
        reader = self.source.driver_rows()
        if reader is None:
            raise Ineligible("input the driver does not read (a folder reached through Hadoop)")
        if sum(f.length for f in batches) > MAX_BYTES:
            raise Ineligible(f"more than {MAX_BYTES} bytes of staged input")
        rows = reader(batches)
        tables = {r.table for r in rows}
        soft = sorted(tables & set(self.soft_delete))
        if soft:
            raise Ineligible("a soft-delete column", ", ".join(soft))
        state = self._state(run, tables, {(r.table, r.keys) for r in rows})
        classified = classify(rows, state, self.markers)
        counted = _tally(classified)
        stats, bad = staging_reader.check_batches(counted.batches, batches)
        if bad:
            raise Ineligible("a batch the job sets aside", ", ".join(sorted(bad)))
        firsts = [b.get("min_commit") for b in counted.batches.values()]
        self._refuse_continued_groups(run, classified, firsts)
        return DriverRun(self, run, classified, counted, stats, keys_new=not state)

    def _state(self, run: Run, tables: set[str], keys: set[tuple[str, str]]) -> dict[tuple[str, str], StateRow]:
        """Each of ``keys``' state row, as ``current_state`` held it before the run."""
        import pyarrow.compute as pc
        from deltalake import DeltaTable

        name = layout.CURRENT_STATE.name
        if not keys or self.ledger.held_version(name) == 0:
            return {}
        before = self.ledger.version_before(name, run)  # None: the state does not hold the run yet
        found = self.ledger.table(name) if before is None else DeltaTable(
            self.ledger.uri(name), version=before, storage_options=self.ledger.storage_options or None)
        partitions, wanted = {"table_name": sorted(tables)}, sorted({k for _, k in keys})
        # The keys alone first: a run of new keys (the common case of a stream) reads no row texts.
        if not _rows(found, partitions, self.origin, ["keys"], keys=wanted).num_rows:
            return {}
        read = _rows(found, partitions, self.origin,
                     ["table_name", "keys", "commit_timestamp", "commit_nanos", "is_deleted", "new_values", "version_seq"],
                     keys=wanted)
        if read.num_rows and pc.any(pc.is_valid(read.column("version_seq"))).as_py():
            raise Ineligible("state rows with version sequences (history tables)")
        state: dict[tuple[str, str], StateRow] = {}
        for row in read.to_pylist():
            key = (row["table_name"], row["keys"])
            if key in state or row["commit_timestamp"] is None or row["new_values"] is None:
                raise Ineligible("a key's state is not one row with values", f"{key[0]} {key[1]}")
            state[key] = StateRow(watermark_table.text_of(row["commit_timestamp"], row["commit_nanos"]),
                                  bool(row["is_deleted"]), row["new_values"])
        return {k: v for k, v in state.items() if k in keys}

    def _refuse_continued_groups(self, run: Run, rows: list[Classified], firsts: list[str | None]) -> None:
        """Refuse a run whose changes share a transaction group with rows an earlier run wrote (their
        numbers continue the group's: Spark's engine numbers them)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        name = layout.CHANGELOG.name
        new = [c for c in rows if not c.is_dup]
        if not new or self.ledger.held_version(name) == 0 or all_newer(self.ledger, firsts):
            return
        dates = sorted({c.commit_date for c in new})
        groups = pa.array(sorted({commit_group(c.row.commit_timestamp) for c in new}), pa.string())
        table = self.ledger.table(name)
        read = _rows(table, {"commit_date": dates}, self.origin, ["transaction_group", "run_version"])
        earlier = pc.and_(pc.is_in(read.column("transaction_group"), value_set=groups),
                          pc.less(read.column("run_version"), run.version))
        if pc.any(earlier).as_py():
            raise Ineligible("changes that continue a transaction group an earlier run wrote")


def _rows(table: Any, partitions: dict[str, list[str]], origin: Source, columns: list[str], *,
          keys: list[str] | None = None) -> Any:
    """``columns`` of the rows of ``origin`` in ``table``'s ``partitions`` (column -> values), as Arrow;
    with ``keys``, of the rows of those keys alone (reading only the files that may hold them)."""
    import pyarrow.compute as pc

    read = (arrow_table(table, filters=[(p, "in", v) for p, v in partitions.items()], columns=[*SOURCE_COLUMNS, *columns])
            if keys is None else rows_holding(table, "keys", keys, partitions=partitions, columns=[*SOURCE_COLUMNS, *columns]))
    for column, value in zip(SOURCE_COLUMNS, origin.values(), strict=True):
        read = read.filter(pc.equal(read.column(column), value))
    return read.select(columns)


class DriverRun(PreparedRun):
    """A prepared small run: its classified rows, written table by table."""

    def __init__(self, engine: DriverEngine, run: Run, rows: list[Classified], counted: Tally, stats: list[Any], *,
                 keys_new: bool = False) -> None:
        self.engine, self.run, self.rows = engine, run, rows
        #: No key of the run was in the state before it: its state rows are all inserts.
        self.keys_new = keys_new
        self.outcome = Outcome(batches=stats, counts=counted.counts, old_values_by="python")
        self.groups = number_groups(rows)

    def write(self, table: str) -> None:
        ledger, run, origin = self.engine.ledger, self.run, self.engine.origin
        if table == layout.CHANGELOG.name:
            changes = [self._changelog_record(c) for c in self.rows if not c.is_dup]
            if changes:
                self._append(layout.CHANGELOG, arrow_rows.table(layout.CHANGELOG, changes, origin))
        elif table == layout.CURRENT_STATE.name:
            finals = [self._state_record(c) for c in self.rows if c.is_final]
            if finals and self.keys_new:
                # Every row an insert, as the MERGE would make it, without the MERGE's scan of the state
                # (one run at a time per warehouse: no key can have come in since the state was read).
                self._append(layout.CURRENT_STATE, arrow_rows.table(layout.CURRENT_STATE, finals, origin))
            elif finals:
                self._merge_state(arrow_rows.table(layout.CURRENT_STATE, finals, origin))
        else:
            watermark_table.write_run(ledger, run, origin, self.outcome.batches, self.engine.markers)
        hold(ledger, run, table)

    def _append(self, spec: layout.TableSpec, rows: Any) -> None:
        from deltalake import write_deltalake

        ledger = self.engine.ledger
        write_deltalake(ledger.table(spec.name), rows, mode="append", partition_by=list(spec.partition_by),
                        commit_properties=ledger.commit_properties(self.run), storage_options=ledger.storage_options or None)

    def _merge_state(self, rows: Any) -> None:
        ledger = self.engine.ledger
        tables = sorted(set(rows.column("table_name").to_pylist()))
        on = " AND ".join(f"t.{c} = s.{c}" for c in (*SOURCE_COLUMNS, "table_name", "keys"))
        among = ", ".join("'" + t.replace("'", "''") + "'" for t in tables)
        (ledger.table(layout.CURRENT_STATE.name)
         .merge(rows, f"{on} AND t.table_name IN ({among})", source_alias="s", target_alias="t",
                commit_properties=ledger.commit_properties(self.run))
         .when_matched_update_all().when_not_matched_insert_all().execute())

    def _common(self, c: Classified) -> dict[str, Any]:
        """The columns the changelog and the state share, in the record's layout."""
        x = c.row
        return {"table_name": x.table, "keys": x.keys, "key_columns": x.key_columns, "column_types": x.types_json,
                "new_values": x.json, "commit_timestamp": x.commit_timestamp, "mod_type": c.mod_type,
                "change_id": c.change_id, "run_version": self.run.version}

    def _changelog_record(self, c: Classified) -> dict[str, Any]:
        x = c.row
        sequence, members = self.groups[c.change_id]
        return {**self._common(c), "old_values": c.old_values, "value_capture_type": records.VALUE_CAPTURE_TYPE,
                "commit_date": c.commit_date, "transaction_group": commit_group(x.commit_timestamp),
                "record_sequence": sequence, "number_of_records_in_group": members, "read_timestamp": x.read_timestamp,
                # "" stays "": SQL's coalesce keeps it
                "read_method": "cdc" if x.read_method is None else x.read_method,
                "shard": x.shard, "watcher_id": x.watcher_id, "batch_id": x.batch_id}

    def _state_record(self, c: Classified) -> dict[str, Any]:
        return {**self._common(c), "is_deleted": c.row.in_mod_type == "DELETE", "version_seq": None}

    def close(self) -> None:
        self.rows = []


def number_groups(rows: list[Classified]) -> dict[str, tuple[int, int]]:
    """Each written row's (record_sequence, number_of_records_in_group): within its commit
    timestamp's group, by table and key (as :func:`...rules.grouping.add_grouping` numbers a new group)."""
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


def _tally(rows: list[Classified]) -> Tally:
    """The tally Spark's aggregation gives for these rows (:func:`..spark.tally.tally`)."""
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
                 max_commit_ns=max(commits), min_commit_ns=min(commits), stream_mark_ns=None, new_finals=g["finals"])
        out.append(g)
    return from_groups(out)
