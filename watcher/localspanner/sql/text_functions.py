"""More STRING and BYTES functions: padding, splitting, code points, Soundex, base32, normalization.

Registered in SQLite under ``ls_`` names (:data:`SPECS`); NULL in, NULL out unless said.
A function returning ARRAY gives the stored array (JSON text; BYTES elements as base64).

Example:
    >>> pad("abc", 6, "xy", 1), pad("abcdef", 3, None, 0)
    ('xyxabc', 'abc')
    >>> soundex("Ashcraft"), split("a,b", ",")
    ('A261', '["a", "b"]')
"""

from __future__ import annotations

import base64
import json
import re
import unicodedata
from functools import lru_cache
from typing import Any

from . import time_functions
from .udf import UdfSpec, fail


def _as_bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


def _chr(code: int | None) -> str | None:
    if code is None:
        return None
    if code == 0:
        return ""
    if not 0 < code <= 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        fail(f"CODE_POINTS_TO_STRING: invalid code point {code}")
    return chr(code)


def pad(value: str | bytes | None, length: int | None, pattern: str | bytes | None, on_left: int) -> str | bytes | None:
    """LPAD (``on_left`` 1) and RPAD: padded with ``pattern`` (a space by default) or cut to ``length``."""
    if value is None or length is None:
        return None
    if pattern is None:
        pattern = b" " if isinstance(value, bytes) else " "
    if length < 0:
        fail(f"{'LPAD' if on_left else 'RPAD'}: the length must not be negative, got {length}")
    if len(value) >= length:
        return value[:length]
    if not pattern:
        fail(f"{'LPAD' if on_left else 'RPAD'}: the pattern must not be empty")
    need = length - len(value)
    fill = (pattern * (need // len(pattern) + 1))[:need]
    return fill + value if on_left else value + fill  # type: ignore[operator]


def split(value: str | bytes | None, delimiter: str | bytes | None) -> str | None:
    """SPLIT as a stored ARRAY: an empty delimiter splits into characters (bytes)."""
    if value is None or delimiter is None:
        return None
    if isinstance(value, bytes):
        parts_b = [value[i:i + 1] for i in range(len(value))] if not delimiter else value.split(_as_bytes(delimiter))
        return json.dumps([base64.b64encode(p).decode("ascii") for p in parts_b])
    parts = list(value) if not delimiter else value.split(str(delimiter))
    return json.dumps(parts if value else [""], ensure_ascii=False)


_SOUNDEX = {**dict.fromkeys("BFPV", "1"), **dict.fromkeys("CGJKQSXZ", "2"), **dict.fromkeys("DT", "3"),
            "L": "4", **dict.fromkeys("MN", "5"), "R": "6"}


def soundex(value: str | None) -> str | None:
    """American Soundex of the Latin letters; '' when there are none."""
    if value is None:
        return None
    letters = [ch for ch in value.upper() if "A" <= ch <= "Z"]
    if not letters:
        return ""
    out, last = letters[0], _SOUNDEX.get(letters[0], "")
    for ch in letters[1:]:
        code = _SOUNDEX.get(ch, "")
        if code and code != last:
            out += code
        if ch not in "HW":
            last = code
        if len(out) == 4:
            break
    return out.ljust(4, "0")


_FORMS = ("NFC", "NFKC", "NFD", "NFKD")


def normalize(value: str | None, form: str | None) -> str | None:
    if value is None:
        return None
    mode = (form or "NFC").upper()
    if mode not in _FORMS:
        fail(f"NORMALIZE: unknown normalization mode {form}")
    return unicodedata.normalize(mode, value)  # type: ignore[arg-type]


def normalize_and_casefold(value: str | None, form: str | None) -> str | None:
    folded = normalize(value, form)
    return None if folded is None else unicodedata.normalize((form or "NFC").upper(), folded.casefold())  # type: ignore[arg-type]


@lru_cache(maxsize=128)
def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        fail(f"Cannot parse regular expression: {exc}")


def regexp_extract_all(value: str | None, pattern: str | None) -> str | None:
    if value is None or pattern is None:
        return None
    rx = _regex(pattern)
    if rx.groups > 1:
        fail("Regular expressions passed into extraction functions must not have more than 1 capturing group")
    found = [m.group(1) if rx.groups == 1 else m.group(0) for m in rx.finditer(value)]
    return json.dumps(found, ensure_ascii=False)


def to_code_points(value: str | bytes | None) -> str | None:
    if value is None:
        return None
    return json.dumps(list(value) if isinstance(value, bytes) else [ord(c) for c in value])


def _codes(array: str) -> list[Any]:
    return json.loads(array)


def code_points_to_string(array: str | None) -> str | None:
    if array is None:
        return None
    codes = _codes(array)
    if any(c is None for c in codes):
        return None
    return "".join(_chr(c) or "" for c in codes)


def code_points_to_bytes(array: str | None) -> bytes | None:
    if array is None:
        return None
    codes = _codes(array)
    if any(c is None for c in codes):
        return None
    if any(not 0 <= c <= 255 for c in codes):
        fail("CODE_POINTS_TO_BYTES: every value must be in 0..255")
    return bytes(codes)


def timestamp_string(ts: str | None, zone: str | None) -> str | None:
    """STRING(timestamp, zone): the canonical text in ``zone`` ('+00', not '+00:00', for whole hours)."""
    if ts is None or zone is None:
        return None
    text = time_functions.format_timestamp("%Y-%m-%d %H:%M:%E*S%Ez", ts, zone)
    assert text is not None
    return text[:-3] if text.endswith(":00") else text


def to_base32(value: str | bytes | None) -> str | None:
    return None if value is None else base64.b32encode(_as_bytes(value)).decode("ascii")


def from_base32(value: str | None) -> bytes | None:
    if value is None:
        return None
    try:
        return base64.b32decode(value)
    except (ValueError, TypeError):
        fail(f"Failed to decode invalid base32 string: {value!r}")


def safe_bytes_to_string(value: bytes | None) -> str | None:
    return None if value is None else bytes(value).decode("utf-8", errors="replace")


def error(message: str | None) -> None:
    """ERROR(message): the statement fails with the message."""
    fail("NULL" if message is None else message)


SPECS: tuple[UdfSpec, ...] = (
    UdfSpec("ls_error", 1, error),
    UdfSpec("ls_pad", 4, pad),
    UdfSpec("ls_split", 2, split),
    UdfSpec("ls_soundex", 1, soundex),
    UdfSpec("ls_normalize", 1, lambda v: normalize(v, None)),
    UdfSpec("ls_normalize", 2, normalize),
    UdfSpec("ls_normalize_and_casefold", 2, normalize_and_casefold),
    UdfSpec("ls_regexp_extract_all", 2, regexp_extract_all),
    UdfSpec("ls_to_code_points", 1, to_code_points),
    UdfSpec("ls_code_points_to_string", 1, code_points_to_string),
    UdfSpec("ls_code_points_to_bytes", 1, code_points_to_bytes),
    UdfSpec("ls_safe_bytes_to_string", 1, safe_bytes_to_string),
    UdfSpec("ls_to_base32", 1, to_base32),
    UdfSpec("ls_from_base32", 1, from_base32),
    UdfSpec("ls_timestamp_string", 2, timestamp_string),
)
