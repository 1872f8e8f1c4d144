"""Table hints in both dialects: GoogleSQL's ``@{FORCE_INDEX=Idx}`` and PostgreSQL's ``/*@ FORCE_INDEX=idx */``.

A watcher takes a hint in either form and sends it in its database's form, so one configuration
serves both dialects. The hint's entries (``KEY=value``, comma-separated) are kept as given: in a
PostgreSQL database an unquoted index name is folded to lower case when the index is created, so
give the index name as the database spells it.

| dialect | form |
|---|---|
| GoogleSQL | ``@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}`` |
| PostgreSQL | ``/*@ FORCE_INDEX=idx_singers_shardid_lastupdated */`` |

Example:
    >>> table_hint(POSTGRESQL, "@{FORCE_INDEX=Idx}")
    '/*@ FORCE_INDEX=Idx */'
    >>> table_hint(GOOGLE_SQL, "/*@ FORCE_INDEX=Idx */")
    '@{FORCE_INDEX=Idx}'
"""

from __future__ import annotations

import re

from ..errors import ConfigurationError
from .base import GOOGLE_SQL, POSTGRESQL, Dialect

#: Each dialect's hint form: the pattern that reads it, the template that writes it right after the table's name.
HINT_FORMS: dict[str, tuple[re.Pattern[str], str]] = {
    GOOGLE_SQL.name: (re.compile(r"^@\{\s*(?P<entries>[^{}]*?)\s*\}$"), "@{{{entries}}}"),
    POSTGRESQL.name: (re.compile(r"^/\*@\s*(?P<entries>.*?)\s*\*/$", re.DOTALL), " /*@ {entries} */"),
}
#: One entry: a hint key and its value (an index name, a method, a boolean).
_ENTRY = re.compile(r"^\s*[A-Za-z_]+\s*=\s*[A-Za-z0-9_]+\s*$")


def hint_entries(hint: str) -> str:
    """The entries of a hint in either form (``""`` for no hint); a ConfigurationError for anything else.

    >>> hint_entries("@{FORCE_INDEX=Idx}"), hint_entries("")
    ('FORCE_INDEX=Idx', '')
    >>> hint_entries("FORCE_INDEX=Idx")
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: table_hint must look like @{FORCE_INDEX=...} or /*@ FORCE_INDEX=... */, got 'FORCE_INDEX=Idx'
    """
    text = (hint or "").strip()
    if not text:
        return ""
    for pattern, _ in HINT_FORMS.values():
        found = pattern.match(text)
        if found is not None:
            entries = found.group("entries")
            if entries and all(_ENTRY.match(e) for e in entries.split(",")):
                return ", ".join(e.strip().replace(" ", "") for e in entries.split(","))
    raise ConfigurationError(f"table_hint must look like @{{FORCE_INDEX=...}} or /*@ FORCE_INDEX=... */, got {hint!r}")


def table_hint(dialect: Dialect, hint: str) -> str:
    """``hint`` (either form, or ``""``) in ``dialect``'s form, to follow the table's name in FROM.

    >>> table_hint(GOOGLE_SQL, "@{FORCE_INDEX=A, GROUPBY_SCAN_OPTIMIZATION=TRUE}")
    '@{FORCE_INDEX=A, GROUPBY_SCAN_OPTIMIZATION=TRUE}'
    """
    return hint_sql(dialect, hint).strip()


def hint_sql(dialect: Dialect, hint: str) -> str:
    """The hint as it follows the table name: a space before PostgreSQL's comment form, none before GoogleSQL's.

    >>> hint_sql(GOOGLE_SQL, "@{FORCE_INDEX=I}"), hint_sql(POSTGRESQL, "@{FORCE_INDEX=I}"), hint_sql(POSTGRESQL, "")
    ('@{FORCE_INDEX=I}', ' /*@ FORCE_INDEX=I */', '')
    """
    entries = hint_entries(hint)
    return HINT_FORMS[dialect.name][1].format(entries=entries) if entries else ""
