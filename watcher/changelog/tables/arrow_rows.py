"""Rows of the Delta tables built in Python, as Arrow tables delta-rs writes: the driver engine's side of :mod:`.frames`.

:func:`.frames.to_delta` turns the job's record layout into the Delta tables' columns in Spark SQL;
this module does the same for rows computed on the driver, from the same layouts
(:mod:`.layout`): the exact commit timestamp text becomes a TIMESTAMP to the microsecond with the
nanoseconds of its second beside it (:func:`.watermark_table.timestamp_of`), the commit date a
DATE, and the source database goes in front. Both engines therefore write the same columns and
types, which ``tests/changelog/test_driver_engine.py`` checks on the same runs.

Example:
    >>> t = table(layout.WATERMARKS, [], DEFAULT_SOURCE)
    >>> t.num_rows, t.schema.names[:3]
    (0, ['source_project', 'source_instance', 'source_database'])
    >>> delta_row({"commit_timestamp": "2024-05-01T00:00:01.123456789Z"}, DEFAULT_SOURCE)["commit_nanos"]
    123456789
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from . import layout
from .source import DEFAULT_SOURCE, Source
from .watermark_table import timestamp_of

__all__ = ["DEFAULT_SOURCE", "delta_row", "table"]


def delta_row(record: Mapping[str, Any], source: Source) -> dict[str, Any]:
    """A row in the record's layout (:mod:`..rules.records`) as the Delta tables hold it.

    >>> delta_row({"commit_timestamp": "2024-05-01T00:00:00.000000007Z", "commit_date": "2024-05-01"},
    ...           DEFAULT_SOURCE)["commit_date"]
    datetime.date(2024, 5, 1)
    """
    out = {**source.row(), **record}
    text = record.get("commit_timestamp")
    if text is not None:
        out["commit_timestamp"], out["commit_nanos"] = timestamp_of(text)
    if record.get("commit_date") is not None:
        out["commit_date"] = dt.date.fromisoformat(record["commit_date"])
    return out


def table(spec: layout.TableSpec, records: Iterable[Mapping[str, Any]], source: Source) -> Any:
    """``records`` (record layout) as an Arrow table of ``spec``'s Delta columns, in its order and types."""
    import pyarrow as pa

    schema = spec.arrow_schema()
    rows = [delta_row(r, source) for r in records]
    return pa.table([pa.array([row.get(name) for row in rows], schema.field(name).type) for name in schema.names],
                    schema=schema)
