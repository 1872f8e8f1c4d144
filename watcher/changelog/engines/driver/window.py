"""The per-key window on the driver: each new row's previous row, duplicate flag, mod_type, old values, change_id.

The rules are the job's (:func:`watcher.changelog.engines.spark.pipeline.per_key_window`, :mod:`...rules.classify`,
:mod:`...rules.dedup`, :mod:`...rules.old_values`), for the runs the driver engine takes: polled rows (no
versions at one timestamp, no partial or change-stream rows), each key's state row (its newest
over the layers) older than or as old as its new rows. A key's rows are ordered by commit
timestamp, then batch and seq, after its state row; a row at its previous row's timestamp is a
duplicate; the first row of the key's newest timestamp that is not a duplicate is its new state.

Example:
    >>> from ...input.staged import parse_batch
    >>> line = ('{{"v":1,"batch_id":"b","seq":{s},"table":"T","key_columns":["Id"],"keys":["1"],'
    ...         '"commit_timestamp":"2024-05-01T00:00:0{s}.000000000Z","values":{{"Id":"1","N":{s}}},"types":{{}}}}')
    >>> rows = parse_batch("".join(line.format(s=s) + "\\n" for s in range(2)), "table=T/b.jsonl")
    >>> [(c.mod_type, c.old_values, c.is_final) for c in classify(rows, {}, {})]
    [('UPSERT', '{}', False), ('UPDATE', '{"N":0}', True)]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ...input import Ineligible
from ...input.staged import StagedRow
from ...rules.classify import mod_type_function
from ...rules.dedup import change_id
from .old_values import fast_old_values


@dataclass(frozen=True, slots=True)
class StateRow:
    """What the window needs of a key's state row (the newest over its layers)."""

    commit_timestamp: str
    is_deleted: bool
    new_values: str


@dataclass(slots=True)
class Classified:
    """A new row and what the window found for it."""

    row: StagedRow
    is_dup: bool
    mod_type: str
    old_values: str
    change_id: str
    is_final: bool

    @property
    def commit_date(self) -> str:
        return self.row.commit_timestamp[:10]


#: :data:`...rules.classify.RULES` as Python (generated from them, as the job's CASE is).
_RULES = mod_type_function()


def _mod_type(row: StagedRow, previous: tuple[str, bool, str] | None, complete_ts: str | None) -> str:
    """The row's mod_type by :data:`...rules.classify.RULES`; the engine takes no late or soft-deleted row."""
    mod_type = _RULES(in_mod_type=row.in_mod_type, _is_late=False, _soft_deleted=False,
                      _prev_ts=None if previous is None else previous[0],
                      _prev_deleted=None if previous is None else previous[1],
                      _complete_ts=complete_ts, commit_timestamp=row.commit_timestamp)
    assert mod_type is not None  # the rules end with one that always matches
    return mod_type


def _old_values(mod_type: str, previous: tuple[str, bool, str] | None, row: StagedRow) -> str:
    if previous is None:
        return "{}"
    if mod_type == "UPDATE":
        fast = fast_old_values(previous[2], row.json)
        if fast is None:
            raise Ineligible("an update whose columns changed (the exact old-values path is Spark's)", row.batch)
        return fast
    if mod_type == "DELETE" and not previous[1]:
        return previous[2]
    return "{}"


def _order(row: StagedRow) -> tuple[str, str, int]:
    return row.commit_timestamp, row.batch_id, row.seq


def classify(rows: Iterable[StagedRow], state: Mapping[tuple[str, str], StateRow],
             markers: Mapping[str, str]) -> list[Classified]:
    """The new rows classified, in the window's order (by table and key, then commit order).

    ``state``: each key's state row by (table, key); ``markers``: per table, the read timestamp
    from which it is complete (:mod:`...rules.completeness`).
    """
    by_key: dict[tuple[str, str], list[StagedRow]] = {}
    for row in rows:
        by_key.setdefault((row.table, row.keys), []).append(row)
    out: list[Classified] = []
    for key in sorted(by_key):
        ordered = by_key[key]
        if len(ordered) > 1:
            ordered.sort(key=lambda r: (*_order(r), r.batch))
            for a, b in zip(ordered, ordered[1:], strict=False):
                # Spark orders such two rows arbitrarily: only a copy of one batch in another file
                # (the same row twice) leaves every outcome the same whichever comes first.
                if _order(a) == _order(b) and dataclasses.replace(a, batch="") != dataclasses.replace(b, batch=""):
                    raise Ineligible("two different rows of one key with the same batch id and seq", b.batch)
        before = state.get(key)
        if before is not None and before.commit_timestamp > ordered[0].commit_timestamp:
            raise Ineligible("a change older than its key's state (late)", ordered[0].batch)
        # (commit timestamp, deleted, JSON) of the previous row
        previous = None if before is None else (before.commit_timestamp, before.is_deleted, before.new_values)
        newest = ordered[-1].commit_timestamp
        complete_ts = markers.get(key[0])
        for row in ordered:
            is_dup = previous is not None and previous[0] == row.commit_timestamp
            mod_type = _mod_type(row, previous, complete_ts)
            old = _old_values(mod_type, previous, row)
            out.append(Classified(row, is_dup, mod_type, old, change_id(row.table, row.keys, row.commit_timestamp),
                                  row.commit_timestamp == newest and not is_dup))
            previous = (row.commit_timestamp, row.in_mod_type == "DELETE", row.json)
    return out
