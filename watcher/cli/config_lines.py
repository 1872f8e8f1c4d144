"""Where a configuration key is written: the line of a dotted key (``sinks[1].topic``) in TOML text.

tomllib gives values without positions, so the configuration's errors find their key's line by
a scan of the text: table headers (``[tables.Singers]``, ``[[sinks]]`` counted per array) and
``key =`` lines, each read as a dotted path; the line whose path is the longest prefix of the key
wins (a key inside an inline table points at the line that holds the table, a missing key at
its section's header). Multi-line strings are skipped; anything else odd simply finds no line.

Example:
    >>> text = '[watch]\\nlimit = "x"\\n[[sinks]]\\ntype = "staging"\\n[[sinks]]\\ntype = "kafka"\\n'
    >>> key_line(text, "watch.limit"), key_line(text, "sinks[1].type"), key_line(text, "sinks[1].name")
    (2, 6, 5)
    >>> key_line(text, "database.project") is None
    True
"""

from __future__ import annotations

import re

__all__ = ["key_line"]

_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
_DOTTED = rf"{_PART}(?:\s*\.\s*{_PART})*"
_HEADER = re.compile(rf"^\s*(\[\[?)\s*({_DOTTED})\s*\]\]?\s*(?:#.*)?$")
_ASSIGN = re.compile(rf"^\s*({_DOTTED})\s*=")
_PARTS = re.compile(_PART)


def _parts(dotted: str) -> list[str]:
    return [p[1:-1] if p[0] in "\"'" else p for p in _PARTS.findall(dotted)]


def _paths(text: str) -> list[tuple[int, str]]:
    """Each header and ``key =`` line as (line number, dotted path with array indexes)."""
    out: list[tuple[int, str]] = []
    arrays: dict[str, int] = {}  # array-of-tables path -> index of its last entry
    table = ""
    in_string = False
    for number, line in enumerate(text.splitlines(), start=1):
        quotes = line.count('"""') + line.count("'''")
        if in_string:
            in_string = quotes % 2 == 0
            continue
        if header := _HEADER.match(line):
            path = ""
            parts = _parts(header.group(2))
            for i, part in enumerate(parts):
                path = f"{path}.{part}" if path else part
                last = i == len(parts) - 1
                if header.group(1) == "[[" and last:
                    arrays[path] = arrays.get(path, -1) + 1
                if path in arrays:
                    path = f"{path}[{arrays[path]}]"
            table = path
            out.append((number, table))
        elif assign := _ASSIGN.match(line):
            key = ".".join(_parts(assign.group(1)))
            out.append((number, f"{table}.{key}" if table else key))
        in_string = quotes % 2 == 1
    return out


def key_line(text: str, key: str) -> int | None:
    """The line (from 1) where dotted ``key`` of TOML ``text`` is written, or of its nearest enclosing
    table; None when neither is in the text."""
    best: tuple[int, int] | None = None  # (length matched, line)
    for number, path in _paths(text):
        if key == path or (key.startswith(path) and key[len(path)] in ".["):
            if best is None or len(path) > best[0]:
                best = (len(path), number)
    return best[1] if best else None
