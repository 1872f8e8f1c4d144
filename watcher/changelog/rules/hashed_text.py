"""An identity hashed from a row's columns, as data: rendered to Spark SQL and to Python alike.

The changelog names a change (:data:`.dedup.CHANGE_ID`) and a transaction group
(:mod:`.grouping`) by a prefix of the SHA-256 of a text built from a row's columns. Both engines
compute them: the Spark job by the SQL expression :meth:`HashedText.sql` renders, the driver
engine (and the Kafka sink's headers) by :meth:`HashedText.python`, both from one description.

Example:
    >>> ident = HashedText(("table_name", "keys"), "/", 12)
    >>> ident.sql()
    "substring(sha2(concat_ws('/', table_name, keys), 256), 1, 12)"
    >>> ident.python(("T", '{"Id":"1"}'))
    '83c6f9c8fbfe'
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class HashedText:
    """An identity as data: the first ``digits`` hex digits of the SHA-256 of a UTF-8 text, ``prefix``
    followed by ``parts`` (column names; those in ``integers`` hold integers, hashed as their
    decimal text) joined by ``separator``.

    Of several parts a null one is left out (as SQL's ``concat_ws`` leaves it); a single part is
    hashed as it is, and its identity is null where it is null.
    """

    parts: tuple[str, ...]
    separator: str
    digits: int
    integers: frozenset[str] = frozenset()
    prefix: str = ""

    def sql(self, columns: Mapping[str, str] | None = None) -> str:
        """The identity as a Spark SQL expression over the part columns (``columns`` renames some).

        >>> HashedText(("a", "n"), "/", 8, frozenset({"n"})).sql()
        "substring(sha2(concat_ws('/', a, cast(n AS string)), 256), 1, 8)"
        >>> HashedText(("t",), "", 16, prefix="tx:").sql({"t": "_s.t"})
        "substring(sha2(concat('tx:', _s.t), 256), 1, 16)"
        """
        named = [(columns or {}).get(p, p) for p in self.parts]
        texts = [f"cast({c} AS string)" if p in self.integers else c for p, c in zip(self.parts, named, strict=True)]
        text = texts[0] if len(texts) == 1 else f"concat_ws({_sql_text(self.separator)}, {', '.join(texts)})"
        if self.prefix:
            text = f"concat({_sql_text(self.prefix)}, {text})"
        return f"substring(sha2({text}, 256), 1, {self.digits})"

    def python(self, values: Sequence[Any]) -> str | None:
        """The identity of the parts' ``values`` (in the order of :attr:`parts`), as :meth:`sql` computes it.

        >>> HashedText(("a", "n"), "/", 8, frozenset({"n"})).python(["x", None])
        '2d711642'
        >>> HashedText(("t",), "", 16, prefix="tx:").python([None]) is None
        True
        """
        if len(values) != len(self.parts):
            raise ValueError(f"{len(values)} values for the {len(self.parts)} parts {', '.join(self.parts)}")
        if len(values) == 1 and values[0] is None:
            return None
        texts = [value if name not in self.integers else str(value)
                 for name, value in zip(self.parts, values, strict=True) if value is not None]
        text = self.prefix + self.separator.join(texts)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:self.digits]


def _sql_text(text: str) -> str:
    r"""A SQL string literal of ``text``, characters other than printable ASCII as ``\uXXXX`` escapes.

    >>> print(_sql_text("a\x1f'"))
    'a\u001f\u0027'
    """
    return "'" + "".join(c if c.isascii() and c.isprintable() and c not in "'\\" else f"\\u{ord(c):04x}"
                         for c in text) + "'"
