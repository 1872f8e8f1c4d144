"""Wire <-> stored values of the newer scalar types: FLOAT32, UUID and INTERVAL (see ``values.py``).

* FLOAT32 is stored like FLOAT64 (a REAL, NaN as the text 'NaN'), rounded to single
  precision on the way in; a finite value too large for it is refused.
* UUID is stored as its lower-case 8-4-4-4-12 text, which sorts like the 128-bit value.
* INTERVAL is stored as ``intervals.to_stored`` text, which sorts like its length.

Example:
    >>> float32_to_stored(None, 0.1), uuid_to_stored(None, "7F3C8A1E2B4D4C6E9A0B1C2D3E4F5A6B")
    (0.10000000149011612, '7f3c8a1e-2b4d-4c6e-9a0b-1c2d3e4f5a6b')
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

from .. import errors
from . import intervals
from .types import SpannerType
from .value_errors import ValueError_

NAN_TEXT = "NaN"
#: The wire's words for the non-finite floats.
FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_F32 = struct.Struct("<f")


def float32_to_stored(t: SpannerType, w: Any) -> float | str:
    """A wire FLOAT32 (a number or a non-finite word) rounded to single precision."""
    if isinstance(w, bool):
        raise ValueError_(errors.expected_wire_value("FLOAT32", w))
    if isinstance(w, (int, float)):
        v = float(w)
    elif isinstance(w, str) and w in FLOAT_WORDS:
        v = FLOAT_WORDS[w]
    else:
        raise ValueError_(errors.expected_wire_value("FLOAT32", w))
    if math.isnan(v):
        return NAN_TEXT
    rounded = round_float32(v)
    if math.isinf(rounded) and not math.isinf(v):
        raise ValueError_(errors.float32_out_of_range(w))
    return rounded


def round_float32(v: float) -> float:
    """``v`` rounded to the nearest FLOAT32 (IEEE single precision), as a Python float.

    >>> round_float32(0.1)
    0.10000000149011612
    """
    if math.isnan(v) or math.isinf(v):
        return v
    try:
        return float(_F32.unpack(_F32.pack(v))[0])
    except OverflowError:
        return math.copysign(math.inf, v)


def float32_text(v: float) -> str:
    """The shortest decimal text that reads back as the same FLOAT32 (how Spanner prints one).

    >>> float32_text(round_float32(0.1))
    '0.1'
    """
    for digits in range(1, 10):
        text = f"{v:.{digits}g}"
        if round_float32(float(text)) == v:
            return text
    return repr(v)


_UUID_HEX = re.compile(r"^([0-9a-fA-F](?:-?[0-9a-fA-F]){31})$")


def canonical_uuid(text: str) -> str:
    """Lower-case 8-4-4-4-12 text of a UUID; GoogleSQL accepts single hyphens anywhere between digits.

    >>> canonical_uuid("A1A2A3A4-B1B2-C1C2-D1D2-D3D4D5D6D7D8")
    'a1a2a3a4-b1b2-c1c2-d1d2-d3d4d5d6d7d8'
    """
    m = _UUID_HEX.match(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise ValueError_(errors.invalid_uuid(text))
    h = m.group(1).replace("-", "").lower()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def uuid_to_stored(t: SpannerType, w: Any) -> str:
    """A wire UUID (text) in its canonical stored form."""
    if not isinstance(w, str):
        raise ValueError_(errors.expected_wire_value("UUID", w))
    return canonical_uuid(w)


def interval_to_stored(t: SpannerType, w: Any) -> str:
    """A wire INTERVAL (ISO 8601 duration text) in its stored form (``intervals.to_stored``)."""
    if not isinstance(w, str):
        raise ValueError_(errors.expected_wire_value("INTERVAL", w))
    try:
        return intervals.to_stored(intervals.parse_iso(w))
    except intervals.IntervalError as exc:
        raise ValueError_(errors.invalid_interval(w, exc)) from None
