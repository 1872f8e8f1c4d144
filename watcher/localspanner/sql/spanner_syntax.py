"""Text-level handling of Spanner syntax that sqlglot's BigQuery dialect does not parse.

Before parsing, a statement loses its ``@{...}`` hints (statement hints at the start,
table hints after a table name, join hints after JOIN), its ``THEN RETURN ...`` tail and
the ``OR UPDATE`` / ``OR IGNORE`` of ``INSERT OR UPDATE``. What was removed is returned
as data so that the translator can act on it. ``f(SEQUENCE s)`` of the sequence functions
becomes ``f('s')``. Quotes and comments are respected.

Example:
    >>> p = preprocess("SELECT * FROM `Singers`@{FORCE_INDEX=Idx} WHERE x = 1")
    >>> p.sql, p.table_hints
    ('SELECT * FROM `Singers` WHERE x = 1', (('singers', (('FORCE_INDEX', 'Idx'),)),))
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD_BEFORE = re.compile(r"(`[^`]*`|[A-Za-z_][\w]*)(?:\s*\.\s*(`[^`]*`|[A-Za-z_][\w]*))*\s*$")
_THEN_RETURN = re.compile(r"\bTHEN\s+RETURN\b", re.IGNORECASE)
_INSERT_OR = re.compile(r"^(\s*INSERT)\s+OR\s+(UPDATE|IGNORE)\b", re.IGNORECASE)
_DML_START = re.compile(r"^\s*(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)
_SEQUENCE_ARG = re.compile(r"\b(GET_NEXT_SEQUENCE_VALUE|GET_INTERNAL_SEQUENCE_STATE)\s*\(\s*SEQUENCE\s+(`[^`]*`|[A-Za-z_]\w*)\s*\)",
                           re.IGNORECASE)


@dataclass(frozen=True)
class Preprocessed:
    """A statement ready for sqlglot, plus what was taken out of it.

    ``table_hints`` holds (lower-case table name, ((KEY, value), ...)) in textual order.
    """

    sql: str
    statement_hints: tuple[tuple[str, str], ...] = ()
    table_hints: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    then_return: str | None = None
    insert_mode: str | None = None  # "UPDATE" or "IGNORE"


def mask(sql: str) -> str:
    """``sql`` with the contents of strings, quoted names and comments blanked out (same length)."""
    out = list(sql)
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"`":
            triple = sql[i:i + 3] == c * 3 and c != "`"
            end_tok = c * 3 if triple else c
            j = i + len(end_tok)
            while j < n and sql[j:j + len(end_tok)] != end_tok:
                j += 2 if sql[j] == "\\" else 1
            j = min(n, j + len(end_tok))
            for k in range(i + len(end_tok), max(i + len(end_tok), j - len(end_tok))):
                out[k] = " "
            i = j
        elif sql.startswith("--", i) or c == "#":
            j = sql.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = " " * (j - i)
            i = j
        else:
            i += 1
    return "".join(out)


def _parse_hint_body(body: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for part in body.split(","):
        if not part.strip():
            continue
        key, _, value = part.partition("=")
        pairs.append((key.strip().upper(), value.strip().strip("`'\"")))
    return tuple(pairs)


def _strip_hints(sql: str, masked: str) -> tuple[str, str, list, list]:
    statement_hints: list[tuple[str, str]] = []
    table_hints: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    pieces: list[str] = []
    masked_pieces: list[str] = []
    pos = 0
    for m in re.finditer(r"@\s*\{", masked):
        start = m.start()
        end = masked.find("}", m.end())
        if end < 0:
            break
        body = _parse_hint_body(sql[m.end():end])
        before = masked[:start]
        if not before.strip():
            statement_hints.extend(body)
        else:
            w = _WORD_BEFORE.search(before)
            if w is not None and w.group(0).strip().upper() != "JOIN":
                last = re.split(r"\s*\.\s*", sql[w.start():w.end()].strip())[-1].strip("`")
                table_hints.append((last.lower(), body))
        pieces.append(sql[pos:start])
        masked_pieces.append(masked[pos:start])
        pos = end + 1
    pieces.append(sql[pos:])
    masked_pieces.append(masked[pos:])
    return "".join(pieces), "".join(masked_pieces), statement_hints, table_hints


def _sequence_arguments(text: str, masked: str) -> tuple[str, str]:
    """``GET_NEXT_SEQUENCE_VALUE(SEQUENCE s)`` -> ``GET_NEXT_SEQUENCE_VALUE('s')`` (sqlglot cannot parse the former)."""
    found = list(_SEQUENCE_ARG.finditer(masked))
    if not found:
        return text, masked
    for m in reversed(found):
        name = text[m.start(2):m.end(2)].strip("`").replace("\\", "\\\\").replace("'", "\\'")
        text = f"{text[:m.start()]}{text[m.start(1):m.end(1)]}('{name}'){text[m.end():]}"
    return text, mask(text)


def _depth_at(masked: str, index: int) -> int:
    return masked.count("(", 0, index) - masked.count(")", 0, index)


_FLOAT32 = re.compile(r"\bFLOAT32\b", re.IGNORECASE)


def _rename_float32(text: str, masked: str) -> tuple[str, str]:
    """sqlglot's BigQuery dialect has no FLOAT32; ``FLOAT4`` parses as its single-precision
    type (``literals.spanner_type_of`` maps it back). Same length, so ``masked`` stays aligned."""
    if "FLOAT32" not in masked.upper():
        return text, masked
    spans = [m.span() for m in _FLOAT32.finditer(masked)]
    for start, end in spans:
        text = text[:start] + "FLOAT4 " + text[end:]
        masked = masked[:start] + "FLOAT4 " + masked[end:]
    return text, masked


def preprocess(sql: str) -> Preprocessed:
    """Split Spanner-only syntax off ``sql`` (see the module docstring)."""
    text = sql.strip().rstrip(";").rstrip()
    masked = mask(text)
    text, masked = _rename_float32(text, masked)
    text, masked, statement_hints, table_hints = _strip_hints(text, masked)
    text, masked = _sequence_arguments(text, masked)
    then_return = None
    if _DML_START.match(masked):
        for m in _THEN_RETURN.finditer(masked):
            if _depth_at(masked, m.start()) == 0:
                then_return = text[m.end():].strip()
                text, masked = text[:m.start()].rstrip(), masked[:m.start()].rstrip()
                break
    insert_mode = None
    head = _INSERT_OR.match(masked)
    if head:
        insert_mode = head.group(2).upper()
        text = head.group(1) + text[head.end():]
    return Preprocessed(text.strip(), tuple(statement_hints), tuple(table_hints), then_return, insert_mode)


def is_dml(sql: str) -> bool:
    """True for INSERT, UPDATE and DELETE statements (cheap: looks at the first word).

    >>> is_dml("@{LOCK_SCANNED_RANGES=exclusive} UPDATE T SET x = 1 WHERE true"), is_dml("SELECT 1")
    (True, False)
    """
    masked = mask(sql)
    stripped = re.sub(r"^\s*@\s*\{[^}]*\}", "", masked)
    return _DML_START.match(stripped) is not None
