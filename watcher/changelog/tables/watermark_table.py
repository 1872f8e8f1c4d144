"""The ``watermarks`` Delta table: per source table, up to which commit timestamp changelog and state are complete.

A run's last commit. Its rows are few (one per watched table), so they are computed on the
driver from the table as it was before the run and the run's batches (:mod:`..rules.watermarks`: each
poll loop's greatest timestamp seen, a table's watermark the smallest of its loops'), and merged
with delta-rs, committed as the run (:meth:`.ledger.Ledger.commit_properties`): no Spark job.
The loops are kept in ``loop_watermarks`` (JSON), so the next run can move them.

Example:
    >>> rows = next_rows([], {"T": {"1": "2024-05-01T00:00:02.000000005Z", "2": "2024-05-01T00:00:01.000000001Z"}},
    ...                  {}, DEFAULT_SOURCE, 4)
    >>> [(r["table_name"], r["watermark_nanos"], r["loops"], r["run_version"]) for r in rows]
    [('T', 1, 2, 4)]
    >>> text_of(rows[0]["watermark"], rows[0]["watermark_nanos"])
    '2024-05-01T00:00:01.000000001Z'
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from ..rules import watermarks
from . import layout
from .ledger import Ledger, Run
from .readers import arrow_table
from .source import DEFAULT_SOURCE, Source

__all__ = ["DEFAULT_SOURCE", "next_rows", "read_rows", "text_of", "timestamp_of", "write", "write_run"]


def timestamp_of(text: str) -> tuple[dt.datetime, int]:
    """An exact timestamp text as (UTC datetime to the microsecond, nanoseconds of its second).

    >>> timestamp_of("2024-05-01T00:00:01.123456789Z")
    (datetime.datetime(2024, 5, 1, 0, 0, 1, 123456, tzinfo=datetime.timezone.utc), 123456789)
    """
    seconds, _, fraction = text.rstrip("Z").partition(".")
    fraction = (fraction + "000000000")[:9]
    when = dt.datetime.fromisoformat(seconds).replace(tzinfo=dt.UTC)
    return when.replace(microsecond=int(fraction[:6])), int(fraction)


def text_of(when: dt.datetime, nanos: int | None) -> str:
    """The exact timestamp text of a (datetime, nanoseconds) pair, as the job writes them."""
    utc = when.astimezone(dt.UTC) if when.tzinfo else when
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(nanos if nanos is not None else utc.microsecond * 1000):09d}Z"


def read_rows(ledger: Ledger, source: Source | None = None) -> list[dict[str, Any]]:
    """The table's rows (of ``source``, when given), as delta-rs reads them (none before the first run)."""
    found = ledger._open(layout.WATERMARKS.name)
    rows = arrow_table(found).to_pylist() if found is not None else []
    return [r for r in rows if source is None or tuple(r[c] for c in ("source_project", "source_instance",
                                                                        "source_database")) == source.values()]


def next_rows(previous: list[dict[str, Any]], new_loops: Mapping[str, Mapping[str, str]], markers: Mapping[str, str],
              source: Source, run_version: int) -> list[dict[str, Any]]:
    """The rows a run writes: each table its batches moved (``new_loops``: table -> loop -> timestamp
    seen), its loops merged with those ``previous`` (the source's rows before the run) held."""
    before = {r["table_name"]: json.loads(r["loop_watermarks"] or "{}") for r in previous}
    out = []
    for table in sorted(new_loops):
        loops = watermarks.merge_loops(before.get(table, {}), new_loops[table])
        mark = watermarks.table_watermark(loops)
        when, nanos = timestamp_of(mark) if mark else (None, None)
        out.append({**source.row(), "table_name": table, "watermark": when, "watermark_nanos": nanos,
                    "loops": len(loops), "loop_watermarks": json.dumps(loops, sort_keys=True),
                    "complete_from": markers.get(table), "run_version": run_version})
    return out


def write(ledger: Ledger, run: Run, rows: list[dict[str, Any]]) -> None:
    """Merge ``rows`` into the table as ``run``'s commit (a commit without rows when there are none,
    so that the table holds the run either way)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    props = ledger.commit_properties(run)
    data = pa.Table.from_pylist(rows, schema=layout.WATERMARKS.arrow_schema())
    options = ledger.storage_options or None
    if not rows:
        write_deltalake(ledger.table(layout.WATERMARKS.name), data, mode="append", commit_properties=props,
                        storage_options=options)
        return
    on = " AND ".join(f"t.{c} = s.{c}" for c in ("source_project", "source_instance", "source_database", "table_name"))
    (ledger.table(layout.WATERMARKS.name)
     .merge(data, on, source_alias="s", target_alias="t", commit_properties=props)
     .when_matched_update_all().when_not_matched_insert_all().execute())


def write_run(ledger: Ledger, run: Run, source: Source, batches: list[Any], markers: Mapping[str, str]) -> None:
    """A run's part of the table: the loops its ``batches`` (:class:`..input.staging_reader.BatchStats`) moved,
    merged with the source's rows before the run (what every engine writes)."""
    rows = next_rows(read_rows(ledger, source), watermarks.loops_from_batches(batches), markers, source, run.version)
    write(ledger, run, rows)
