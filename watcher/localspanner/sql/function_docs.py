"""docs/functions.md and the README's summary of it, generated from the rows of :mod:`.function_table`.

``python -m watcher.localspanner.sql.function_docs`` writes both (or the docs file to the path given);
a test checks that what the repository holds is what :func:`markdown` and :func:`readme_summary` render now.

Example:
    >>> text = markdown()
    >>> "| ARRAY_TO_STRING | Array | supported |" in text
    True
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from .function_table import ROWS, Function

#: The generated file, relative to the repository's root.
DOCS_PATH = Path("docs") / "functions.md"
#: The README, whose block between these markers is :func:`readme_summary`.
README_PATH = Path("README.md")
README_MARKERS = ("<!-- functions:begin -->", "<!-- functions:end -->")

_HEADER = """# GoogleSQL functions in the local Spanner server

Generated from `watcher/localspanner/sql/function_table.py` by
`python -m watcher.localspanner.sql.function_docs`; do not edit by hand.

Every function Spanner's GoogleSQL reference lists, with what the embedded server does with it.
A *supported* function works wherever the last column says (queries, DML, generated
columns, column DEFAULTs, CHECK constraints; stored generated columns may be index keys).
A *refused* one is answered with UNIMPLEMENTED naming the function and the statement, so
a test that needs it fails clearly rather than with a wrong value; the official emulator or
Spanner itself runs it.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|") or "-"


def _line(row: Function) -> str:
    cells = (row.name, row.category, row.state, row.arity_text if row.does is not None else "",
             row.nulls, row.where)
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def markdown() -> str:
    """The whole of docs/functions.md."""
    rows = sorted(ROWS, key=lambda r: (r.category, r.name))
    counts = Counter(r.state for r in ROWS)
    by_category: dict[str, Counter[str]] = {}
    for r in ROWS:
        by_category.setdefault(r.category, Counter())[r.state] += 1
    lines = [_HEADER, f"{counts['supported']} supported, {counts['refused']} refused.", "",
             "| Category | Supported | Refused |", "|---|---|---|"]
    lines += [f"| {c} | {n['supported']} | {n['refused']} |" for c, n in sorted(by_category.items())]
    lines += ["", "| Function | Category | State | Arguments | NULL handling | Where |", "|---|---|---|---|---|---|"]
    lines += [_line(r) for r in rows]
    return "\n".join(lines) + "\n"


def readme_summary() -> str:
    """The README's paragraph on the function library: the counts and every refused function by name.

    >>> readme_summary().startswith("The embedded server runs ")
    True
    """
    counts = Counter(r.state for r in ROWS)
    refused = ", ".join(f"`{r.name}`" for r in sorted(ROWS, key=lambda r: r.name) if r.state == "refused")
    return (f"The embedded server runs {counts['supported']} of the {len(ROWS)} functions of Spanner's GoogleSQL "
            f"reference, in queries, DML, generated columns, DEFAULTs and CHECK constraints; the other "
            f"{counts['refused']} are refused with UNIMPLEMENTED naming the function and the statement: "
            f"{refused}. Each one, with its arguments and NULL handling: [docs/functions.md](docs/functions.md).")


def with_readme_summary(readme: str) -> str:
    """``readme`` with the block between :data:`README_MARKERS` replaced by :func:`readme_summary`.

    >>> with_readme_summary("a\\n<!-- functions:begin -->\\nold\\n<!-- functions:end -->\\nb").splitlines()[2][:9]
    'The embed'
    """
    begin, end = README_MARKERS
    head, rest = readme.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{readme_summary()}\n{end}{tail}"


def main(argv: list[str] | None = None) -> int:
    """Write the file (``argv[0]``, or docs/functions.md and the README's summary under the current directory)."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DOCS_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(), encoding="utf-8")
    if not args:
        README_PATH.write_text(with_readme_summary(README_PATH.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
