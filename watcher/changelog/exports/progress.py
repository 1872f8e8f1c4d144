"""How far an export target got: the changelog it follows, the selection, the last run exported, its increments.

A target exports the changelog of one warehouse (named by the Delta table's id, which stays with
the table when the folder moves), one :class:`.selection.Selection`, in one format. Each export
adds the runs after :attr:`Progress.last_run` up to a snapshot's newest run as one
:class:`Increment` (none when the selection keeps no row of those runs). The folder exports keep
this as a small JSON file carrying a format version; the Spanner export keeps it in a table.

Example:
    >>> p = Progress.start("bigquery", Selection(database="d"), "id-1")
    >>> p = p.recorded(Increment(1, 1, 3, 7, {"Singers": 5}), 3, 7)
    >>> p.last_run, p.next_number, Progress.from_json(p.to_json(), "x") == p
    (3, 2, True)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from . import errors
from .selection import Selection

#: The format version of the progress file and of an increment's description; a reader refuses a newer one.
FORMAT_VERSION = 1
#: Digits of an increment's number in its folder name (sorts as text).
NUMBER_DIGITS = 6


@dataclass(frozen=True)
class Increment:
    """One export's rows: the runs ``first_run`` to ``last_run`` of Delta version ``delta_version``,
    ``rows`` per table."""

    number: int
    first_run: int
    last_run: int
    delta_version: int
    rows: dict[str, int] = field(default_factory=dict)

    @property
    def folder(self) -> str:
        """The increment's folder name.

        >>> Increment(3, 4, 4, 9).folder
        'increment=000003'
        """
        return f"increment={self.number:0{NUMBER_DIGITS}d}"

    @property
    def total(self) -> int:
        return sum(self.rows.values())

    def as_dict(self) -> dict[str, Any]:
        return {"number": self.number, "first_run": self.first_run, "last_run": self.last_run,
                "delta_version": self.delta_version, "rows": dict(sorted(self.rows.items()))}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Increment:
        return cls(int(data["number"]), int(data["first_run"]), int(data["last_run"]), int(data["delta_version"]),
                   {str(k): int(v) for k, v in (data.get("rows") or {}).items()})


@dataclass(frozen=True)
class Progress:
    """A target's progress: what it exports, and the last run (of Delta version ``delta_version``) it holds."""

    format: str
    selection: Selection
    table_id: str
    last_run: int = 0
    delta_version: int = -1
    increments: tuple[Increment, ...] = ()

    @classmethod
    def start(cls, format_name: str, selection: Selection, table_id: str) -> Progress:
        return cls(format_name, selection, table_id)

    @property
    def next_number(self) -> int:
        return (self.increments[-1].number if self.increments else 0) + 1

    def recorded(self, increment: Increment | None, last_run: int, delta_version: int) -> Progress:
        """The progress once ``increment`` (None: the runs held no selected row) is in the target."""
        added = (increment,) if increment is not None else ()
        return replace(self, last_run=last_run, delta_version=delta_version, increments=self.increments + added)

    def check(self, where: str, format_name: str, selection: Selection, table_id: str) -> None:
        """Refuse an export of another format, selection or changelog table into this target."""
        if format_name != self.format:
            raise errors.other_format(where, self.format, format_name)
        if selection != self.selection:
            raise errors.other_selection(where, self.selection.describe(), selection.describe())
        if table_id != self.table_id:
            raise errors.other_warehouse(where, self.table_id, table_id)

    def to_json(self) -> str:
        return json.dumps({"format_version": FORMAT_VERSION, "format": self.format, "selection": self.selection.as_dict(),
                           "changelog_table_id": self.table_id, "last_run": self.last_run,
                           "delta_version": self.delta_version,
                           "increments": [i.as_dict() for i in self.increments]}, indent=1)

    @classmethod
    def from_json(cls, text: str, where: str) -> Progress:
        data = read_versioned(text, where)
        try:
            return cls(str(data["format"]), Selection.from_dict(data["selection"]), str(data["changelog_table_id"]),
                       int(data["last_run"]), int(data["delta_version"]),
                       tuple(Increment.from_dict(i) for i in data.get("increments") or ()))
        except (KeyError, TypeError, ValueError) as exc:
            raise errors.bad_state(where, f"{type(exc).__name__}: {exc}") from None


def read_versioned(text: str, where: str) -> dict[str, Any]:
    """A JSON object of a known format version (an error naming ``where`` otherwise)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise errors.bad_state(where, f"not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("format_version"), int):
        raise errors.bad_state(where, "no format_version")
    if data["format_version"] > FORMAT_VERSION:
        raise errors.newer_state(where, data["format_version"], FORMAT_VERSION)
    return data
