"""Tokens of a GoogleSQL DDL statement, and the identifier quoting rules.

The lexer knows just enough of GoogleSQL to let the parser find statement structure
and the extent of embedded expressions: identifiers (plain or back-quoted, with
escapes), string and bytes literals (so parentheses inside them do not count),
numbers, single-character symbols, and the three comment forms (``--``, ``#``,
``/* */``), which it drops.

Example:
    >>> [t.text for t in tokenize("CREATE TABLE `My Table` -- note")]
    ['CREATE', 'TABLE', '`My Table`', '']
    >>> tokenize("`a\\\\`b`")[0].value
    'a`b'
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from .. import errors

IDENT = "ident"
QUOTED = "quoted"
STRING = "string"
NUMBER = "number"
SYMBOL = "symbol"
EOF = "eof"

# GoogleSQL reserved keywords: such names must be back-quoted to serve as identifiers.
RESERVED_WORDS = frozenset(
    """
    ALL AND ANY ARRAY AS ASC ASSERT_ROWS_MODIFIED AT BETWEEN BY CASE CAST COLLATE CONTAINS
    CREATE CROSS CUBE CURRENT DEFAULT DEFINE DESC DISTINCT ELSE END ENUM ESCAPE EXCEPT
    EXCLUDE EXISTS EXTRACT FALSE FETCH FOLLOWING FOR FROM FULL GROUP GROUPING GROUPS HASH
    HAVING IF IGNORE IN INNER INTERSECT INTERVAL INTO IS JOIN LATERAL LEFT LIKE LIMIT LOOKUP
    MERGE NATURAL NEW NO NOT NULL NULLS OF ON OR ORDER OUTER OVER PARTITION PRECEDING PROTO
    RANGE RECURSIVE RESPECT RIGHT ROLLUP ROWS SELECT SET SOME STRUCT TABLESAMPLE THEN TO
    TREAT TRUE UNBOUNDED UNION UNNEST USING WHEN WHERE WINDOW WITH WITHIN
    """.split()
)

_PLAIN_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[A-Za-z0-9_]*")
_STRING_PREFIXES = frozenset({"r", "b", "rb", "br"})

# Escapes allowed in back-quoted identifiers (and strings); the value is the character meant.
_SIMPLE_ESCAPES = {
    "\\": "\\", "`": "`", "'": "'", '"': '"', "?": "?",
    "n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
# How quote_identifier writes the characters that cannot appear as themselves between back-quotes.
_QUOTE_ESCAPES = {"\\": "\\\\", "`": "\\`", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@dataclass(frozen=True)
class Token:
    """One token. ``value`` is the identifier's name (unescaped) or the text itself."""

    kind: str
    text: str
    value: str
    start: int
    end: int
    line: int
    column: int

    def is_word(self, word: str) -> bool:
        """True for the unquoted keyword ``word`` (case-insensitive); quoted names never match."""
        return self.kind == IDENT and self.text.upper() == word

    def describe(self) -> str:
        return "end of statement" if self.kind == EOF else f"'{self.text}'"


def quote_identifier(name: str) -> str:
    """Back-quote ``name`` only when it needs it (reserved word or unusual characters).

    >>> quote_identifier("Singers"), quote_identifier("Order"), quote_identifier("My Table")
    ('Singers', '`Order`', '`My Table`')
    """
    if _PLAIN_IDENT.match(name) and name.upper() not in RESERVED_WORDS:
        return name
    return "`" + "".join(_QUOTE_ESCAPES.get(ch, ch) for ch in name) + "`"


def tokenize(statement: str) -> list[Token]:
    """Split ``statement`` into tokens, ending with an EOF token.

    Raises:
        SpannerError: an unterminated quote or comment, or a bad escape (INVALID_ARGUMENT).
    """
    return _Lexer(statement).run()


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.tokens: list[Token] = []

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def fail(self, offset: int, detail: str) -> errors.SpannerError:
        line, col = self.position(offset)
        return errors.ddl_syntax_at(self.text, detail, line, col)

    def emit(self, kind: str, start: int, end: int, value: str | None = None) -> None:
        line, col = self.position(start)
        text = self.text[start:end]
        self.tokens.append(Token(kind, text, text if value is None else value, start, end, line, col))

    def run(self) -> list[Token]:
        text, pos = self.text, 0
        while pos < len(text):
            ch = text[pos]
            if ch.isspace():
                pos += 1
            elif text.startswith("--", pos) or ch == "#":
                end = text.find("\n", pos)
                pos = len(text) if end < 0 else end + 1
            elif text.startswith("/*", pos):
                end = text.find("*/", pos + 2)
                if end < 0:
                    raise self.fail(pos, errors.LEX_UNTERMINATED_COMMENT)
                pos = end + 2
            elif ch == "`":
                pos = self.quoted_identifier(pos)
            elif ch in "'\"":
                pos = self.string(pos, pos)
            elif (m := _WORD.match(text, pos)) is not None:
                after = m.end()
                if m.group().lower() in _STRING_PREFIXES and after < len(text) and text[after] in "'\"":
                    pos = self.string(pos, after)
                else:
                    self.emit(IDENT, pos, after)
                    pos = after
            elif (m := _NUMBER.match(text, pos)) is not None:
                self.emit(NUMBER, pos, m.end())
                pos = m.end()
            else:
                self.emit(SYMBOL, pos, pos + 1)
                pos += 1
        self.emit(EOF, len(text), len(text))
        return self.tokens

    def quoted_identifier(self, start: int) -> int:
        text, pos, out = self.text, start + 1, []
        while True:
            if pos >= len(text) or text[pos] == "\n":
                raise self.fail(start, errors.LEX_UNTERMINATED_QUOTED_IDENTIFIER)
            ch = text[pos]
            if ch == "`":
                break
            if ch == "\\":
                char, pos = self.escape(pos)
                out.append(char)
            else:
                out.append(ch)
                pos += 1
        if not out:
            raise self.fail(start, errors.LEX_EMPTY_QUOTED_IDENTIFIER)
        self.emit(QUOTED, start, pos + 1, "".join(out))
        return pos + 1

    def escape(self, pos: int) -> tuple[str, int]:
        """Decode the escape sequence at ``pos`` (a backslash); return it and the next offset."""
        code = self.text[pos + 1 : pos + 2]
        if code in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[code], pos + 2
        if code in _HEX_ESCAPES:
            digits = self.text[pos + 2 : pos + 2 + _HEX_ESCAPES[code]]
            if len(digits) == _HEX_ESCAPES[code] and re.fullmatch(r"[0-9A-Fa-f]+", digits):
                return chr(int(digits, 16)), pos + 2 + len(digits)
        raise self.fail(pos, errors.lex_illegal_escape(code))

    def string(self, start: int, quote_at: int) -> int:
        text = self.text
        quote = text[quote_at] * 3 if text.startswith(text[quote_at] * 3, quote_at) else text[quote_at]
        pos = quote_at + len(quote)
        while True:
            if pos >= len(text) or (len(quote) == 1 and text[pos] == "\n"):
                raise self.fail(start, errors.LEX_UNTERMINATED_STRING)
            if text[pos] == "\\":
                pos += 2
            elif text.startswith(quote, pos):
                pos += len(quote)
                break
            else:
                pos += 1
        self.emit(STRING, start, pos)
        return pos
