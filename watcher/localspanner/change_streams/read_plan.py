"""What one partition query returns, as the reading loop sees it (one :class:`Plan` per partition mode).

The loop (:meth:`~.reader.ChangeStreamReads.execute`) is the same for both modes: it reads up
to a safe timestamp, waits for commits and sends heartbeats; the plan says which rows a time
range holds and how the partition ends. Also here: a stored record's mods as JSON values,
which both modes' rows are made from.

Example:
    >>> from watcher.localspanner.change_streams.records import encode_body
    >>> mod_values({"types": {"K": "INT64"}, "mods": [[{"K": 7}, {}, {}]]})
    [({'K': '7'}, {}, {})]
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..datamodel import types as T
from .capture import json_values


@dataclass(frozen=True)
class Plan:
    """``rows(conn, lo, hi)``: the records (and partition events) in ``[lo, hi]``; once the safe timestamp
    reaches ``last()`` (None: the partition does not end, or its end is not decided yet: asked again
    after each safe timestamp), ``end_rows()``; ``heartbeat(ts)``: a heartbeat's row.
    A plan without ``rows`` is the first query: its ``end_rows()`` name the partitions."""

    last: Callable[[], int | None]
    rows: Callable[[Any, int, int], Iterable[list[Any]]] | None
    end_rows: Callable[[], list[list[Any]]]
    heartbeat: Callable[[int], list[Any]]


@functools.lru_cache(maxsize=1024)
def _type(text: str) -> T.SpannerType:
    return T.parse_type(text)


def mod_values(body: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """A stored record's mods as (keys, new_values, old_values), values in their JSON form."""
    types = {name: _type(text) for name, text in body["types"].items()}
    return [tuple(json_values(part, types) for part in mod) for mod in body["mods"]]  # type: ignore[misc]
