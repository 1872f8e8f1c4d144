"""The project's files speak only of the project: no work bookkeeping, no files from outside it.

Every tracked file (``git ls-files``) is read as text and each line checked against
:data:`BOOKKEEPING`: numbered work periods and tickets ("session 12", "issue #4"), design
notes by number ("seed 002"), branch names of work in progress, and notes kept outside
the repository (DESIGN.md and its siblings, ``../shared``). Comments say what the code does
and why; history belongs to git. Words that are API terms stay: a Spark session, a Spanner
session, a pytest fixture's session scope, a random seed (``--seed 1``, ``seed=3``).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()

#: Bookkeeping, case-insensitive: each alternative is one way work history leaks into the text.
BOOKKEEPING = re.compile(
    r"\bsessions?\s+#?\d+"                                  # session 12, sessions 17-18, Session 9:
    r"|\b(?:this|previous|next|earlier|later|since)\s+sessions?\b"
    r"|\bissues?\s+#?\d+"                                   # issue 16, issue #4
    r"|\bthe\s+issue\b|\bthe\s+brief\b|\bwork\s+items?\b|\bwork\s+periods?\b"
    r"|\b(?:review|work)\s+rounds?\b|\brounds?\s+of\s+(?:review|work)\b"
    r"|(?<![-\w])seeds?\s+\d+|\bseed's\b|\bthe\s+seeds\b"   # seed 002 (not --seed 1)
    r"|\b(?:DESIGN|REFERENCE|STYLE|DEVELOPERS)\.md\b|\.\./shared\b"
    r"|(?<![\w/-])h-[a-z]+\d+[a-z]?\b",                     # branch names such as h-bench21
    re.IGNORECASE,
)

#: API words that contain a flagged word; removed from a line before it is checked.
LEGITIMATE = re.compile(
    r"\bspark\s+(?:connect\s+)?sessions?\b|\bsparksession\b|\bscope\s*=\s*[\"']session[\"']",
    re.IGNORECASE,
)


def bookkeeping_in(text: str) -> list[tuple[int, str]]:
    """The (line number, match) of every bookkeeping phrase in ``text``.

    >>> bookkeeping_in("x = 1  # as in session 12 (issue #4)\\n--seed 1\\nthe Spark session 2")
    [(1, 'session 12'), (1, 'issue #4')]
    >>> bookkeeping_in("see DESIGN.md; seed 002's workflow")
    [(1, 'DESIGN.md'), (1, 'seed 002')]
    """
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        line = LEGITIMATE.sub(" ", line)
        found += [(number, m.group(0)) for m in BOOKKEEPING.finditer(line)]
    return found


def tracked_files() -> list[str]:
    """The repository's tracked files, or a skip when this is not a git checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: no tracked files to check")
    return [p for p in out.decode().split("\0") if p and p != THIS]


def test_no_tracked_file_carries_work_bookkeeping() -> None:
    problems = []
    for path in tracked_files():
        file = ROOT / path
        if not file.is_file():
            continue  # deleted in the work tree, not yet in the index
        data = file.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary
        text = data.decode("utf-8", errors="replace")
        problems += [f"{path}:{number}: {match!r}" for number, match in bookkeeping_in(text)]
    assert not problems, "work bookkeeping in tracked files (say what and why instead):\n" + "\n".join(problems)


@pytest.mark.parametrize("line", [
    "Targets (issue 16): first run", "(seed 000's workflow)", "see REFERENCE.md section 1", "Session 9: lag",
    "as in sessions 17-18", "cf. ../shared/STYLE.md", "branch h-wr15c", "the issue allows ~90", "since session 11",
])
def test_each_kind_of_bookkeeping_is_caught(line: str) -> None:
    assert bookkeeping_in(line)


@pytest.mark.parametrize("line", [
    "one Spark session (local[2])", "SparkSession.builder", "a Spark Connect session", '@pytest.fixture(scope="session")',
    "--seed 1 --quiet", "random.Random(seed + 1)", "the session's database role", "round 0 has two keys",
    "Issue the SQLite DDL", "a write hot spot", "spark-hash", "/tmp/h4/bench/work",
])
def test_api_words_are_not_bookkeeping(line: str) -> None:
    assert not bookkeeping_in(line)
