"""Scalar SQL functions over stored values: strings, bytes, hashing, arithmetic, array access.

Each is a plain Python function registered in SQLite under an ``ls_`` name (see
:data:`SPECS`, which also gathers the other function modules' specs); the translator calls them where SQLite's built-ins differ from GoogleSQL
(Unicode case mapping, NULL and error rules, 1-based positions, BYTES handling).

Example:
    >>> farm_fingerprint("abc")
    2640714258260161385
    >>> substr("hello", -3, 2)
    'll'
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
from functools import lru_cache
from typing import Any

import farmhash  # type: ignore[import-untyped]

from . import array_functions, json_functions, math_functions, net_functions, text_functions
from .udf import UdfSpec, fail

_TWO_64 = 1 << 64
_TWO_63 = 1 << 63


def _as_bytes(value: str | bytes) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


# --- hashing ----------------------------------------------------------------------------------

def farm_fingerprint(value: str | bytes | None) -> int | None:
    """FarmHash Fingerprint64 of the UTF-8 bytes as a signed INT64 (Spanner's FARM_FINGERPRINT).

    >>> farm_fingerprint("")
    -7286425919675154353
    """
    if value is None:
        return None
    h = farmhash.fingerprint64(_as_bytes(value))
    return h - _TWO_64 if h >= _TWO_63 else h


def _digest(algorithm: str) -> Any:
    def digest(value: str | bytes | None) -> bytes | None:
        return None if value is None else hashlib.new(algorithm, _as_bytes(value)).digest()

    return digest


def to_base64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(_as_bytes(value)).decode("ascii")


def from_base64(value: str | None) -> bytes | None:
    if value is None:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        fail(f"Failed to decode invalid base64 string: {value!r}")


def to_hex(value: bytes | None) -> str | None:
    return None if value is None else _as_bytes(value).hex()


def from_hex(value: str | None) -> bytes | None:
    if value is None:
        return None
    text = value if len(value) % 2 == 0 else "0" + value
    try:
        return bytes.fromhex(text)
    except ValueError:
        fail(f"Failed to decode invalid hexadecimal string: {value!r}")


# --- strings and bytes ----------------------------------------------------------------------------

def lower(value: str | bytes | None) -> str | bytes | None:
    if value is None:
        return None
    return value.lower() if isinstance(value, str) else bytes(value).lower()


def upper(value: str | bytes | None) -> str | bytes | None:
    if value is None:
        return None
    return value.upper() if isinstance(value, str) else bytes(value).upper()


def substr(value: str | bytes | None, position: int | None, length: int | None = -1) -> str | bytes | None:
    """GoogleSQL SUBSTR: 1-based, negative positions count from the end, 0 acts as 1."""
    if value is None or position is None or length is None:
        return None
    if length is not None and length < -1:
        fail("Third argument in SUBSTR() cannot be negative")
    n = len(value)
    if position > 0:
        start = position - 1
    elif position == 0:
        start = 0
    else:
        start = max(n + position, 0)
    end = n if length == -1 else start + length
    return value[start:end]


def strpos(value: str | bytes | None, search: str | bytes | None) -> int | None:
    if value is None or search is None:
        return None
    return value.find(search) + 1  # type: ignore[arg-type]


def starts_with(value: str | bytes | None, prefix: str | bytes | None) -> int | None:
    if value is None or prefix is None:
        return None
    return int(value.startswith(prefix))  # type: ignore[arg-type]


def ends_with(value: str | bytes | None, suffix: str | bytes | None) -> int | None:
    if value is None or suffix is None:
        return None
    return int(value.endswith(suffix))  # type: ignore[arg-type]


def byte_length(value: str | bytes | None) -> int | None:
    return None if value is None else len(_as_bytes(value))


def char_length(value: str | bytes | None) -> int | None:
    return None if value is None else len(value)


_TRIMMERS = {"BOTH": "strip", "LEADING": "lstrip", "TRAILING": "rstrip"}


def trim(value: str | bytes | None, chars: str | bytes | None, mode: str) -> str | bytes | None:
    if value is None:
        return None
    method = getattr(value, _TRIMMERS[mode])
    if chars is None:
        return method() if isinstance(value, str) else method(b" ")
    return method(chars)


def concat(*parts: Any) -> str | bytes | None:
    """CONCAT: NULL when any part is NULL; BYTES stay BYTES."""
    if any(p is None for p in parts):
        return None
    if parts and isinstance(parts[0], bytes):
        return b"".join(_as_bytes(p) for p in parts)
    return "".join(p if isinstance(p, str) else str(p) for p in parts)


def repeat(value: str | None, count: int | None) -> str | None:
    if value is None or count is None:
        return None
    if count < 0:
        fail("REPEAT count must not be negative")
    return value * count


def reverse(value: str | bytes | None) -> str | bytes | None:
    return None if value is None else value[::-1]


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        fail(f"Cannot parse regular expression: {exc}")


def regexp_contains(value: str | None, pattern: str | None) -> int | None:
    if value is None or pattern is None:
        return None
    return int(_regex(pattern).search(value) is not None)


def regexp_extract(value: str | None, pattern: str | None) -> str | None:
    if value is None or pattern is None:
        return None
    rx = _regex(pattern)
    if rx.groups > 1:
        fail("Regular expressions passed into extraction functions must not have more than 1 capturing group")
    m = rx.search(value)
    if m is None:
        return None
    return m.group(1) if rx.groups == 1 else m.group(0)


def regexp_replace(value: str | None, pattern: str | None, replacement: str | None) -> str | None:
    if value is None or pattern is None or replacement is None:
        return None
    # GoogleSQL writes group references as \1; Python's re accepts the same syntax.
    return _regex(pattern).sub(replacement.replace("\\0", "\\g<0>"), value)


_FORMAT_SPEC = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d+))?([dioxXfFeEgGsStT%])")


def format_string(fmt: str | None, *args: Any) -> str | None:
    """FORMAT with the common specifiers (%d %i %s %t %T %f %e %g %x %o %%)."""
    if fmt is None:
        return None
    values = list(args)
    out: list[str] = []
    pos = 0
    for m in _FORMAT_SPEC.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        flags, width, precision, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if not values:
            fail("Too few arguments to FORMAT")
        value = values.pop(0)
        if value is None:
            out.append("NULL")
            continue
        if conv in "sStT":
            text = value if isinstance(value, str) else format_value(value)
            out.append(f"%{flags}{width}s" % text)
            continue
        if conv == "i":
            conv = "d"
        spec = f"%{flags}{width}{'.' + precision if precision else ''}{conv}"
        out.append(spec % value)
    out.append(fmt[pos:])
    return "".join(out)


def format_value(value: Any) -> str:
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def format_float(value: float) -> str:
    """How GoogleSQL prints a FLOAT64 as STRING: shortest round-trip, no trailing '.0'."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


# --- arithmetic ------------------------------------------------------------------------------------

def float_divide(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    if b == 0:
        fail("division by zero: " + f"{format_value(a)} / {format_value(b)}")
    return float(a) / float(b)


def int_divide(a: int | None, b: int | None) -> int | None:
    if a is None or b is None:
        return None
    if b == 0:
        fail(f"division by zero: DIV({a}, {b})")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def modulo(a: Any, b: Any) -> Any:
    """MOD with the sign of the dividend (like C), an error on zero."""
    if a is None or b is None:
        return None
    if b == 0:
        fail(f"division by zero: MOD({a}, {b})")
    if isinstance(a, float) or isinstance(b, float):
        return math.fmod(a, b)
    return _int_mod(a, b)


def _int_mod(a: int, b: int) -> int:
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


# --- arrays ----------------------------------------------------------------------------------

MAX_GENERATED_ARRAY = 16_000


def generate_array(start: Any, end: Any, step: Any = 1) -> str | None:
    if start is None or end is None or step is None:
        return None
    if step == 0:
        fail("Sequence step cannot be 0.")
    count = math.floor((end - start) / step) + 1 if (end - start) * step >= 0 else 0
    if count > MAX_GENERATED_ARRAY:
        fail(f"GENERATE_ARRAY would produce {count} elements; the local server allows {MAX_GENERATED_ARRAY}.")
    return json.dumps([start + i * step for i in range(max(count, 0))])


_ACCESSORS = {"OFFSET": (0, False), "ORDINAL": (1, False), "SAFE_OFFSET": (0, True), "SAFE_ORDINAL": (1, True)}


def array_at(array: str | None, index: int | None, accessor: str, element_code: str) -> Any:
    """``arr[OFFSET(i)]`` and friends; out of range is an error unless SAFE_."""
    if array is None or index is None:
        return None
    base, safe = _ACCESSORS[accessor]
    items = json.loads(array)
    i = index - base
    if not 0 <= i < len(items):
        if safe:
            return None
        fail(f"Array index {index} is out of bounds")
    return element_from_json(items[i], element_code)


def element_from_json(item: Any, element_code: str) -> Any:
    """The stored form of one element of a stored ARRAY (see values.py)."""
    if item is None:
        return None
    if element_code == "BYTES":
        return base64.b64decode(item)
    if element_code == "BOOL":
        return int(item)
    return item


def array_length(array: str | None) -> int | None:
    return None if array is None else len(json.loads(array))


def bytes_from_json_element(item: str | None) -> bytes | None:
    return None if item is None else base64.b64decode(item)


SPECS: tuple[UdfSpec, ...] = (
    UdfSpec("ls_farm_fingerprint", 1, farm_fingerprint),
    UdfSpec("ls_sha1", 1, _digest("sha1")),
    UdfSpec("ls_sha256", 1, _digest("sha256")),
    UdfSpec("ls_sha512", 1, _digest("sha512")),
    UdfSpec("ls_md5", 1, _digest("md5")),
    UdfSpec("ls_to_base64", 1, to_base64),
    UdfSpec("ls_from_base64", 1, from_base64),
    UdfSpec("ls_to_hex", 1, to_hex),
    UdfSpec("ls_from_hex", 1, from_hex),
    UdfSpec("ls_lower", 1, lower),
    UdfSpec("ls_upper", 1, upper),
    UdfSpec("ls_substr", 2, substr),
    UdfSpec("ls_substr", 3, substr),
    UdfSpec("ls_strpos", 2, strpos),
    UdfSpec("ls_starts_with", 2, starts_with),
    UdfSpec("ls_ends_with", 2, ends_with),
    UdfSpec("ls_byte_length", 1, byte_length),
    UdfSpec("ls_char_length", 1, char_length),
    UdfSpec("ls_trim", 3, trim),
    UdfSpec("ls_concat", -1, concat),
    UdfSpec("ls_repeat", 2, repeat),
    UdfSpec("ls_reverse", 1, reverse),
    UdfSpec("ls_regexp_contains", 2, regexp_contains),
    UdfSpec("ls_regexp_extract", 2, regexp_extract),
    UdfSpec("ls_regexp_replace", 3, regexp_replace),
    UdfSpec("ls_format", -1, format_string),
    UdfSpec("ls_fdiv", 2, float_divide),
    UdfSpec("ls_div", 2, int_divide),
    UdfSpec("ls_mod", 2, modulo),
    UdfSpec("ls_generate_array", 2, generate_array),
    UdfSpec("ls_generate_array", 3, generate_array),
    UdfSpec("ls_array_at", 4, array_at),
    UdfSpec("ls_array_length", 1, array_length),
    UdfSpec("ls_b64_element", 1, bytes_from_json_element),
) + array_functions.SPECS + json_functions.SPECS + text_functions.SPECS + math_functions.SPECS + net_functions.SPECS
