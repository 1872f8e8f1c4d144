"""Per-key commit order across key-range moves (``MUTABLE_KEY_RANGE`` streams), as progress rows say it (pure).

When keys move from partition S to partition D at timestamp T, S's records of them end at
T and D's begin there. Spanner's rule for time-ordered processing: D's reader, at the
move-in, does not go past it until every source has processed all its records with
timestamps <= T; S's reader, at the move-out, tells the destinations they may go on. Here
S *tells* by its progress row: at the move-out it moves its watermark to T and notes
``moved-out:<D>`` among the ids processed at it (:func:`after_move_out`, stored before D may
go on, so it survives a restart). D *waits* until :func:`sources_done`: each source
finished, or is past T, or is at T having noted the move-out to D, or has no row any more
(a finished partition's row is pruned).

Example:
    >>> from .progress import PartitionProgress, RUNNING
    >>> s = PartitionProgress("S", (), 0, 4, RUNNING)
    >>> sources_done({"S": s}, ["S"], 5, "D")
    False
    >>> sources_done({"S": after_move_out(s, 5, ["D"])}, ["S"], 5, "D"), sources_done({}, ["S"], 5, "D")
    (True, True)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from ...model import timestamp_nanos
from .progress import FINISHED, PartitionProgress


def _nanos(ts: Any) -> Any:
    """Timestamps compared in nanoseconds (datetimes compare to the microsecond only)."""
    return timestamp_nanos(ts) if isinstance(ts, dt.datetime) else ts


def moved_out_id(destination: str) -> str:
    """The id a source notes among those processed at its watermark once it moved keys out to ``destination``."""
    return f"moved-out:{destination}"


def after_move_out(progress: PartitionProgress, at: Any, destinations: Iterable[str]) -> PartitionProgress:
    """``progress`` once the partition processed its move-out to ``destinations`` at ``at``."""
    later = at if _nanos(at) >= _nanos(progress.watermark) else progress.watermark
    return progress.moved(later, [moved_out_id(d) for d in destinations])


def sources_done(rows: Mapping[str, PartitionProgress], sources: Iterable[str], at: Any, destination: str) -> bool:
    """True once every source in ``sources`` processed all its records up to ``at`` for the keys it moved to
    ``destination`` (see the module docstring)."""
    for source in sources:
        p = rows.get(source)
        if p is None or p.state == FINISHED or _nanos(p.watermark) > _nanos(at):
            continue
        if _nanos(p.watermark) == _nanos(at) and moved_out_id(destination) in p.delivered_at_watermark:
            continue
        return False
    return True
