"""A change stream's record of a version replaces the polled record an earlier run wrote of it.

Polling and a change stream may watch one table at once. Within a run the per-key order puts
the stream's row of a version before the polled one (:func:`..engines.spark.pipeline.key_order`), so the
stream's row is written and the polled one is its duplicate. Across runs the polled row may
come first: a run writes it (the stream had not staged that version yet), and a later run
brings the stream's row of the same version. That row knows more (the exact mod_type, the old
values, the transaction), so it *replaces* the polled one instead of being dropped:

* the job finds such rows among the new rows that repeat a version an earlier run wrote: a
  stream row that repeats the key's current state (``_replaces`` in the per-key window), or a
  late stream row whose change_id the changelog holds; it looks up those change_ids in the
  changelog partitions (table, commit date) they belong to (:func:`resolve`);
* where the changelog's row is a polled one (no ``server_transaction_id``), the stream's row
  replaces it: the run's changelog commit is then a MERGE on the change id
  (:data:`REPLACES_SQL`) that updates the polled row to the stream's and inserts the run's other
  rows (:mod:`..engines.spark.engine`); where it is a stream row already, the new row stays a duplicate.

The changelog thus shows each version once, in one commit per run. The current state keeps the
key's row as it was (same version, same values and change_id).

Example:
    >>> REPLACES_SQL
    't.change_id = s.change_id AND t.table_name = s.table_name AND t.server_transaction_id IS NULL AND s.server_transaction_id IS NOT NULL'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: SQL: a changelog (or new changelog) row read from a change stream.
IS_STREAM_SQL = "server_transaction_id IS NOT NULL"
#: The MERGE condition of a run's changelog commit (``t`` the changelog, ``s`` the run's rows):
#: a polled row the run's stream row of the same version replaces.
REPLACES_SQL = ("t.change_id = s.change_id AND t.table_name = s.table_name AND t.server_transaction_id IS NULL "
                "AND s.server_transaction_id IS NOT NULL")


@dataclass
class Resolved:
    """New changelog rows after the look-up, and what it found."""

    rows: Any
    #: Late rows dropped because the changelog holds their version already.
    late_known: int = 0
    #: Late stream rows that replace a polled row (written, like other late rows).
    late_replacing: int = 0
    #: (table, mod_type) -> rows that replace a polled row and were counted as duplicates by the tally.
    from_duplicates: dict[tuple[str, str], int] = field(default_factory=dict)


def resolve(new: Any, candidates: Any | None, known: Any) -> Resolved:
    """Drop the new rows whose version the changelog holds, except stream rows replacing a polled one.

    ``new``: the run's new changelog rows (with ``_is_late``); ``candidates``: its stream rows that
    repeat the key's current state (changelog rows of the ``_replaces`` window rows), None when
    there are none; ``known``: the changelog rows earlier runs wrote of the partitions the two may be in.
    """
    from pyspark.sql import functions as F

    by_id = known.groupBy("change_id").agg(F.max(F.expr(IS_STREAM_SQL)).alias("_known_stream"))
    flagged = new.join(by_id, "change_id", "left")
    replacing = F.expr(f"_known_stream IS NOT NULL AND NOT _known_stream AND {IS_STREAM_SQL}")
    dropped = F.col("_known_stream").isNotNull() & ~replacing
    late = flagged.where("_is_late").agg(F.count_if(dropped).alias("dropped"), F.count_if(replacing).alias("replacing"))
    late_known, late_replacing = late.collect()[0]
    rows = flagged.where(~dropped | F.col("_known_stream").isNull()).drop("_known_stream")
    counts: dict[tuple[str, str], int] = {}
    if candidates is not None:
        polled_ids = by_id.where("NOT _known_stream").select("change_id")
        extra = candidates.dropDuplicates(["change_id"]).join(polled_ids, "change_id", "left_semi")
        counts = {(r.table_name, r.mod_type): r["count"] for r in extra.groupBy("table_name", "mod_type").count().collect()}
        if counts:
            rows = rows.unionByName(extra)
    return Resolved(rows, late_known or 0, late_replacing or 0, counts)
