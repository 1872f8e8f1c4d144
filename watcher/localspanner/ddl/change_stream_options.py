"""The OPTIONS a change stream takes, as data: name, type, default and allowed values.

A change stream keeps only the options set explicitly (GetDatabaseDdl prints those
back); :func:`effective` fills in Spanner's defaults. ``= null`` in ``SET OPTIONS``
returns an option to its default. ``retention_period`` is a timespan of whole days,
hours, minutes or seconds (``'36h'``, ``'7d'``) between :data:`MIN_RETENTION_SECONDS`
and :data:`MAX_RETENTION_SECONDS`. ``partition_mode`` chooses the record format the read
function returns (:data:`PARTITION_MODES`; ``IMMUTABLE_KEY_RANGE`` by default).

Example:
    >>> dict(effective((("value_capture_type", "NEW_ROW"),)))["value_capture_type"]
    'NEW_ROW'
    >>> dict(effective(()))["retention_period"], retention_seconds("36h")
    ('1d', 129600)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .. import errors

MIN_RETENTION_SECONDS = 24 * 3600
MAX_RETENTION_SECONDS = 7 * 24 * 3600
VALUE_CAPTURE_TYPES = ("OLD_AND_NEW_VALUES", "NEW_ROW", "NEW_VALUES", "NEW_ROW_AND_OLD_VALUES")
#: The original records (data change, heartbeat, child partitions), and the protobuf ChangeStreamRecord whose
#: partitions live on while key ranges move between them.
IMMUTABLE_KEY_RANGE, MUTABLE_KEY_RANGE = "IMMUTABLE_KEY_RANGE", "MUTABLE_KEY_RANGE"
PARTITION_MODES = (IMMUTABLE_KEY_RANGE, MUTABLE_KEY_RANGE)
#: String options whose value is one of a fixed list (matched in any case, kept in upper case).
_CHOICES = {"value_capture_type": VALUE_CAPTURE_TYPES, "partition_mode": PARTITION_MODES}

_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_TIMESPAN = re.compile(r"(\d+)([dhms])\Z")

OptionValue = str | bool


@dataclass(frozen=True)
class OptionSpec:
    """One option: its INFORMATION_SCHEMA type (``STRING`` or ``BOOL``) and default."""

    name: str
    type: str
    default: OptionValue


SPECS: dict[str, OptionSpec] = {
    s.name: s
    for s in (
        OptionSpec("retention_period", "STRING", "1d"),
        OptionSpec("value_capture_type", "STRING", "OLD_AND_NEW_VALUES"),
        OptionSpec("exclude_ttl_deletes", "BOOL", False),
        OptionSpec("exclude_insert", "BOOL", False),
        OptionSpec("exclude_update", "BOOL", False),
        OptionSpec("exclude_delete", "BOOL", False),
        OptionSpec("allow_txn_exclusion", "BOOL", False),
        OptionSpec("partition_mode", "STRING", IMMUTABLE_KEY_RANGE),
    )
}


def retention_seconds(timespan: str) -> int | None:
    """Seconds in a timespan such as ``'36h'``; None when it is not one.

    >>> retention_seconds("7d"), retention_seconds("1w")
    (604800, None)
    """
    match = _TIMESPAN.match(timespan.strip().lower())
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)] if match else None


def validate(statement: str, stream: str, options: Iterable[tuple[str, OptionValue | None]]) -> dict[str, OptionValue | None]:
    """Checked options by canonical (lower-case) name; None means back to the default.

    Raises:
        SpannerError: INVALID_ARGUMENT naming the stream, the option and the statement
            for an unknown option, one given twice, or a value of the wrong kind or range.
    """
    out: dict[str, OptionValue | None] = {}
    for raw_name, value in options:
        name = raw_name.lower()
        spec = SPECS.get(name)
        if spec is None:
            raise errors.change_stream_unknown_option(statement, stream, raw_name)
        if name in out:
            raise errors.change_stream_option_twice(statement, stream, raw_name)
        out[name] = None if value is None else _check(statement, stream, spec, value)
    return out


def _check(statement: str, stream: str, spec: OptionSpec, value: OptionValue) -> OptionValue:
    shown = repr(value) if isinstance(value, str) else str(value).lower()
    if spec.type == "BOOL":
        if not isinstance(value, bool):
            raise errors.change_stream_bad_option_value(statement, stream, spec.name, shown, "true or false")
        return value
    if not isinstance(value, str):
        raise errors.change_stream_bad_option_value(statement, stream, spec.name, shown, "a string")
    choices = _CHOICES.get(spec.name)
    if choices is not None:
        if value.upper() not in choices:
            raise errors.change_stream_bad_option_value(statement, stream, spec.name, shown, " or ".join(choices))
        return value.upper()
    seconds = retention_seconds(value)
    if seconds is None:
        raise errors.change_stream_bad_option_value(statement, stream, spec.name, shown,
                                                    "a timespan such as '36h' or '7d' (units d, h, m, s)")
    if not MIN_RETENTION_SECONDS <= seconds <= MAX_RETENTION_SECONDS:
        raise errors.change_stream_retention_out_of_range(statement, stream, shown, "1d", "7d")
    return value


def merge(current: tuple[tuple[str, OptionValue], ...], changes: dict[str, OptionValue | None]) -> tuple[tuple[str, OptionValue], ...]:
    """``current`` with ``changes`` applied (None drops an option back to its default), order kept.

    >>> merge((("exclude_insert", True),), {"exclude_insert": None, "retention_period": "2d"})
    (('retention_period', '2d'),)
    """
    out = dict(current)
    for name, value in changes.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return tuple(out.items())


def effective(explicit: tuple[tuple[str, OptionValue], ...]) -> tuple[tuple[str, OptionValue], ...]:
    """Every option with its value: the explicit one, else the default (in :data:`SPECS` order)."""
    given = dict(explicit)
    return tuple((name, given.get(name, spec.default)) for name, spec in SPECS.items())


def print_value(value: OptionValue) -> str:
    """DDL text of an option value.

    >>> print_value(True), print_value("36h")
    ('true', "'36h'")
    """
    return str(value).lower() if isinstance(value, bool) else "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
