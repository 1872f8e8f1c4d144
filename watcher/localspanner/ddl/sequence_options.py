"""The OPTIONS a sequence takes, as data, and building a :class:`~..schema.catalog.Sequence` from them.

``sequence_kind`` (STRING; ``'bit_reversed_positive'`` is the only kind), ``skip_range_min``
and ``skip_range_max`` (INT64, set together: output values in that range are never handed
out), ``start_with_counter`` (INT64 >= 1, the internal counter's first value). ``= NULL`` in
``ALTER SEQUENCE ... SET OPTIONS`` returns an option to its default. Identity columns and
the clause syntax take the same settings; they are checked by the same rules.

Example:
    >>> s = build("Seq", (("sequence_kind", "bit_reversed_positive"), ("start_with_counter", 10)))
    >>> s.kind, s.start_with_counter
    ('bit_reversed_positive', 10)
    >>> build("Seq", (("skip_range_min", 1),), default_kind=True)
    Traceback (most recent call last):
    ...
    watcher.localspanner.errors.base.SpannerError: `skip_range_min` and `skip_range_max` have to be set together
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from .. import errors
from ..schema.catalog import BIT_REVERSED_POSITIVE, Sequence

INT64_MAX = 2**63 - 1

#: Option name -> (the Sequence field it sets, the type of value it takes: "string" or "integer").
SPECS: dict[str, tuple[str, str]] = {
    "sequence_kind": ("kind", "string"),
    "skip_range_min": ("skip_range_min", "integer"),
    "skip_range_max": ("skip_range_max", "integer"),
    "start_with_counter": ("start_with_counter", "integer"),
}

#: The options in the order GetDatabaseDdl and INFORMATION_SCHEMA list them.
ORDER = ("sequence_kind", "skip_range_min", "skip_range_max", "start_with_counter")

OptionValue = str | int | None


def build(name: str, options: Iterable[tuple[str, OptionValue]], *, base: Sequence | None = None,
          clauses: bool = False, default_kind: bool = False) -> Sequence:
    """The sequence ``name`` with ``options`` applied (to ``base`` for ALTER), checked.

    ``default_kind`` True lets the kind stay unset (the database's ``default_sequence_kind``
    decides); otherwise an unset kind is refused.
    """
    seq = base if base is not None else Sequence(name, kind=None, clauses=clauses)
    for option, value in options:
        low = option.lower()
        if low not in SPECS:
            raise errors.sequence_option_unsupported(option)
        field, kind = SPECS[low]
        if value is not None and (isinstance(value, bool) or isinstance(value, int) != (kind == "integer")):
            raise errors.sequence_option_wrong_type(low, kind)
        if low == "sequence_kind" and value is not None:
            if str(value).lower() != BIT_REVERSED_POSITIVE:
                raise errors.sequence_kind_invalid(str(value))
            value = BIT_REVERSED_POSITIVE
        seq = dataclasses.replace(seq, **{field: value})  # type: ignore[arg-type]  # SPECS pairs fields with types
    check(seq, default_kind=default_kind)
    return seq


def check(seq: Sequence, *, default_kind: bool = False) -> None:
    """Spanner's rules for one sequence's settings."""
    if seq.kind is None and not default_kind:
        raise errors.sequence_kind_unspecified()
    if seq.start_with_counter is not None and not 1 <= seq.start_with_counter <= INT64_MAX:
        raise errors.sequence_start_with_counter_invalid()
    if (seq.skip_range_min is None) != (seq.skip_range_max is None):
        raise errors.sequence_skip_range_not_together()
    if seq.skip_range_min is not None and seq.skip_range_max is not None:
        if seq.skip_range_min > seq.skip_range_max:
            raise errors.sequence_skip_range_min_above_max()
        if seq.skip_range_max < 1:
            raise errors.sequence_skip_range_not_positive()


def options_of(seq: Sequence) -> list[tuple[str, OptionValue]]:
    """The options set on ``seq``, in :data:`ORDER` (what GetDatabaseDdl prints)."""
    out: list[tuple[str, OptionValue]] = []
    for option in ORDER:
        value = getattr(seq, SPECS[option][0])
        if value is not None:
            out.append((option, value))
    return out
