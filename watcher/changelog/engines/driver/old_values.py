"""An update's old values on the driver: the job's fast path (:mod:`...rules.old_values`) in Python.

Both rows' JSON texts are split into ``"column":value`` entries by the rule of the job's
regular expression (``ENTRY_PATTERN``, whose ``.`` does not take Java's line terminators), entry
after entry from the opening brace to the closing one; when both rows have the same column
names, the old values are the previous row's entries the new row lacks, without repeats, in the
previous row's order. ``None`` exactly where the job leaves its fast path (a text the rule does
not split whole, a name holding a backslash, different names): the driver engine then hands the
run to Spark, whose exact path compares the rows as maps.

Example:
    >>> fast_old_values('{"Id":"1","Name":"a","On":true}', '{"Id":"1","Name":"b","On":true}')
    '{"Name":"a"}'
    >>> fast_old_values('{"Id":"1","Name":"a"}', '{"Id":"1","Nick":"a"}') is None
    True
"""

from __future__ import annotations

import re

# Java's regular expressions end a "." at any of these (Python's only at "\n"). The job's string,
# ``"(?:[^"\\]|\\.)*+"``, unrolled: runs of plain characters between escapes match the same texts
# and are twice as fast in Python's engine as a repetition of one character or escape at a time.
_STRING = '"[^"\\\\]*+(?:\\\\[^\n\r\x85\u2028\u2029][^"\\\\]*+)*+"'
_VALUE = f'(?:{_STRING}|\\[(?:[^\\[\\]"]|{_STRING})*+\\]|[^,{{}}\\[\\]":]++)'
#: An entry, and its name.
_ENTRY = re.compile(f"(({_STRING}):{_VALUE})")


def entries(text: str) -> tuple[list[str], list[str]] | None:
    """The entries of a compact JSON object text and their names, or None when the rule does not
    split it whole or a name holds a backslash.

    >>> entries('{"a":1,"b":[1,"x]"]}')
    (['"a":1', '"b":[1,"x]"]'], ['"a"', '"b"'])
    >>> entries('{"a":{"n":1}}') is None
    True
    """
    found = _ENTRY.findall(text)  # matches anywhere, as the job's regexp_extract_all: checked below
    split = [entry for entry, _ in found]
    if "{" + ",".join(split) + "}" != text:  # the entries give back the text exactly (entries_ok_sql)
        return None
    names = [name for _, name in found]
    if "\\" in "".join(names):
        return None
    return split, names


def fast_old_values(previous: str, current: str) -> str | None:
    """The previous row's entries the current row lacks, as a JSON object text; None off the fast path."""
    before, after = entries(previous), entries(current)
    if before is None or after is None or before[1] != after[1]:
        return None
    now = set(after[0])
    taken = dict.fromkeys(entry for entry in before[0] if entry not in now)
    return "{" + ",".join(taken) + "}"
