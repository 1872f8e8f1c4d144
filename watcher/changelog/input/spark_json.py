"""JSON text exactly as the Spark job would hold it, from values Python's JSON parser read.

The job keeps JSON as text (:mod:`..engines.spark.pipeline`): Spark's JSON reader copies an object or array
read into a STRING column as compact text, written again by its JSON library (Jackson): no
white space; strings with ``"``, ``\\``, the short escapes ``\\b \\t \\n \\f \\r``, other control
characters as ``\\u00XX`` (upper-case hex) and characters outside the BMP as two escaped UTF-16
surrogates; integers as their digits; other numbers as Java's ``Double.toString``. The driver
engine must produce the same bytes, as later runs compare texts: :func:`copied` does, and says
``None`` where it cannot be sure, which sends the run to Spark:

* a float outside ``[1e-3, 1e7)`` (Java writes ``1.0E7``, Python ``10000000.0``), not finite, or
  whose Python text is in exponent form: inside that range both print the shortest digits that
  read back, in the same layout (checked against Java 17 on 130,000 doubles, and against Spark in
  ``tests/changelog/test_driver_engine.py``);
* a lone UTF-16 surrogate in a string.

:func:`quoted` is the job's ``typed_json.quote_sql`` (a JSON string literal as Spark's ``to_json``
writes it: the same escapes, characters outside the BMP left as they are).

Example:
    >>> copied({"Id": "1", "Score": 2.50, "Tags": ["a\\n", 10**20], "On": True, "X": None})
    '{"Id":"1","Score":2.5,"Tags":["a\\\\n",100000000000000000000],"On":true,"X":null}'
    >>> copied({"Big": 1e7}) is None
    True
    >>> quoted('say "hi"')
    '"say \\\\"hi\\\\""'
"""

from __future__ import annotations

import json
import re
from typing import Any

_SHORT = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}
#: Characters a copied string escapes (quote, backslash, control characters, beyond the BMP).
_COPY_ESCAPES = re.compile('[\x00-\x1f"\\\\\U00010000-\U0010ffff]')
#: Characters ``to_json`` escapes (the same, but characters beyond the BMP stay).
_QUOTE_ESCAPES = re.compile('[\x00-\x1f"\\\\]')
_SURROGATE = re.compile("[\ud800-\udfff]")
#: In Python's compact JSON text (non-ASCII kept): what Spark's copy writes differently (control
#: characters without a short escape, which Python writes in lower-case hex; surrogates and
#: characters beyond the BMP, which Spark escapes). A backslash-u in a string's own text (written
#: as two backslashes and a u) is caught too: only the slower, exact path is taken.
_PYTHON_DIFFERS = re.compile("\\\\u|[\ud800-\udfff\U00010000-\U0010ffff]")
#: The magnitudes where Java's and Python's shortest float texts agree in layout.
_PLAIN_FLOATS = (1e-3, 1e7)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04X}"
    code -= 0x10000  # as Java holds it: two UTF-16 surrogates, each escaped
    return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"


def copied_string(text: str) -> str | None:
    """A string as a copied JSON text writes it (None: a lone surrogate)."""
    if _SURROGATE.search(text):
        return None
    return '"' + (_COPY_ESCAPES.sub(_escape, text) if _COPY_ESCAPES.search(text) else text) + '"'


def quoted(text: str) -> str:
    """``text`` as a JSON string literal, as the job's ``quote_sql`` writes it."""
    return '"' + (_QUOTE_ESCAPES.sub(_escape, text) if _QUOTE_ESCAPES.search(text) else text) + '"'


def number(value: int | float) -> str | None:
    """A JSON number as Spark copies it (None where Java's text may differ from Python's)."""
    if isinstance(value, int):
        return str(value)
    text = repr(value)
    if value != 0 and not _PLAIN_FLOATS[0] <= abs(value) < _PLAIN_FLOATS[1] or "e" in text or "n" in text:
        return None
    return text


def plain_float(text: str) -> float:
    """A JSON float token as Python's parser reads it, refused (ValueError) where :func:`number`
    would not be sure of Java's text: the parser's ``parse_float`` for :func:`fast_copied`'s input.

    >>> plain_float("1.50"), plain_float("-0.0")
    (1.5, -0.0)
    """
    value = float(text)
    if number(value) is None:
        raise ValueError(f"a float Spark writes differently: {text}")
    return value


#: Python's compact JSON writer, built once (``json.dumps`` with options builds one per call).
_PYTHON_WRITER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
#: The same writer's C encoder, made once: ``encode`` makes one per call, and a parsed value holds
#: no cycle to look for (a third less time a value). None where Python has no C encoder.
_MAKE_ENCODER = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODER = None if _MAKE_ENCODER is None else _MAKE_ENCODER(
    None, _PYTHON_WRITER.default, json.encoder.encode_basestring, None, ":", ",", False, False, False)


def _python_text(value: Any) -> str:
    """``_PYTHON_WRITER.encode(value)`` of a parsed JSON value.

    >>> _python_text({"a": "é", "b": [1, 2.5, None]})
    '{"a":"é","b":[1,2.5,null]}'
    """
    if _C_ENCODER is None:
        return _PYTHON_WRITER.encode(value)
    return "".join(_C_ENCODER(value, 0))


def fast_copied(value: Any) -> str | None:
    """:func:`copied` by Python's own JSON writer (in C) where that writes the same text: for values
    parsed with :func:`plain_float` (no other floats), whenever :data:`_PYTHON_DIFFERS` finds nothing.

    >>> fast_copied({"a": "x\\ny", "b": [1, 2.5, None]})
    '{"a":"x\\\\ny","b":[1,2.5,null]}'
    """
    text = _python_text(value)
    return text if _PYTHON_DIFFERS.search(text) is None else copied(value)


def copied(value: Any) -> str | None:
    """A parsed JSON value (dict, list, str, int, float, bool, None) as Spark's reader copies it
    into a STRING column, or None where the driver engine cannot be sure of every byte."""
    if isinstance(value, str):
        return copied_string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return number(value)
    if isinstance(value, dict):
        parts = []
        for name, item in value.items():
            name_text, item_text = copied_string(name), copied(item)
            if name_text is None or item_text is None:
                return None
            parts.append(f"{name_text}:{item_text}")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, list):
        items = [copied(item) for item in value]
        return None if any(item is None for item in items) else "[" + ",".join(items) + "]"  # type: ignore[arg-type]
    return None
