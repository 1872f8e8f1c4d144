"""RESULTS.md's generated part: per benchmark, the command, machine, date, checks and verdict of its JSON result.

Each benchmark's section of ``RESULTS.md`` sits between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``.
Inside it, the block between ``<!-- NAME:summary:begin -->`` and ``<!-- NAME:summary:end -->`` is
written from ``results/NAME.json`` by the runner after every run that records its result there
(``python -m benchmarks <suite>``) and by ``python -m benchmarks.results_page`` for every result at
once; the prose around it (the set-up, the full table, what the figures mean) is kept as written. A
section that does not exist yet is appended with its title as the heading.

Example:
    >>> doc = {"benchmark": "demo", "title": "a demo", "command": "python -m benchmarks x", "quick": False,
    ...        "seconds": 12.5, "date": "2026-12-02", "passed": False,
    ...        "machine": {"nproc": 2, "cpu": "AMD EPYC", "memory_gib": 23.5, "python": "3.11.7",
    ...                    "load_average_at_start_1_5_15": [0.5, 0.4, 0.3], "load_average_1_5_15": [3.1, 2.0, 1.0]},
    ...        "checks": [{"name": "ratio", "value": 0.4, "op": ">=", "target": 0.8, "passed": False}]}
    >>> print(summary(doc))
    <!-- demo:summary:begin -->
    Command: `python -m benchmarks x` (12.5 s). Date: 2026-12-02. Machine: 2 CPUs (AMD EPYC), 23.5 GiB, Python 3.11.7; load average 0.5 at the start, 3.1 at the end. Results: `results/demo.json`.
    <BLANKLINE>
    | target | measured | verdict |
    |---|---:|---|
    | ratio >= 0.8 | 0.4 | **FAIL** |
    <BLANKLINE>
    Verdict: 0 of 1 targets met.
    <!-- demo:summary:end -->
    >>> page = update("# Results\\n", doc)
    >>> page.count("<!-- demo:begin -->"), page.count("Verdict: 0 of 1"), update(page, doc) == page
    (1, 1, True)
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS_MD = os.path.join(HERE, "RESULTS.md")
RESULTS_DIR = os.path.join(HERE, "results")
#: Benchmarks that write their whole section themselves (a table and plot of their own).
WHOLE_SECTIONS = frozenset({"ddl_index_poll", "client_system_tests"})


def _markers(name: str, part: str = "") -> tuple[str, str]:
    infix = f":{part}" if part else ""
    return f"<!-- {name}{infix}:begin -->", f"<!-- {name}{infix}:end -->"


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:,}" if isinstance(value, int) or value == int(value) and abs(value) >= 1000 else f"{value:g}"


def summary(document: dict[str, Any]) -> str:
    """The generated block of one benchmark's section, from its JSON result document."""
    name, m = document["benchmark"], document.get("machine", {})
    begin, end = _markers(name, "summary")
    load = ""
    start, finish = m.get("load_average_at_start_1_5_15"), m.get("load_average_1_5_15")
    if start and finish:
        load = f"; load average {start[0]:g} at the start, {finish[0]:g} at the end"
    quick = " A `--quick` run: a smoke test, not a measurement." if document.get("quick") else ""
    lines = [begin,
             f"Command: `{document['command']}` ({document['seconds']:g} s). Date: {document.get('date') or 'not recorded'}. "
             f"Machine: {m.get('nproc', '?')} CPUs ({m.get('cpu') or 'unknown CPU'}), {m.get('memory_gib', '?')} GiB, "
             f"Python {m.get('python', '?')}{load}. Results: `results/{name}.json`.{quick}", ""]
    checks = document.get("checks", [])
    if checks:
        lines += ["| target | measured | verdict |", "|---|---:|---|"]
        lines += [f"| {c['name']} {c['op']} {_number(c['target'])} | {_number(c['value'])} | "
                  f"**{'PASS' if c['passed'] else 'FAIL'}** |" for c in checks]
        lines += ["", f"Verdict: {sum(bool(c['passed']) for c in checks)} of {len(checks)} targets met."]
    else:
        lines.append("Verdict: no targets (a measurement only).")
    lines.append(end)
    return "\n".join(lines)


def update(text: str, document: dict[str, Any]) -> str:
    """``text`` (RESULTS.md) with ``document``'s generated block replaced, inserted or appended."""
    name = document["benchmark"]
    block = summary(document)
    begin, end = _markers(name)
    s_begin, s_end = _markers(name, "summary")
    if begin not in text or end not in text:
        return text.rstrip("\n") + f"\n\n{begin}\n## {name}: {document['title']}\n\n{block}\n\n{end}\n"
    start, stop = text.index(begin), text.index(end)
    section = text[start:stop]
    if s_begin in section and s_end in section:
        section = section[:section.index(s_begin)] + block + section[section.index(s_end) + len(s_end):]
    else:
        heading_end = section.find("\n", section.find("## "))
        section = section[:heading_end + 1] + "\n" + block + "\n" + section[heading_end + 1:]
    return text[:start] + section + text[stop:]


def _committed_date(path: str) -> str | None:
    """The date the result file was last committed (results written before the documents had a date)."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%cs", "--", path], cwd=HERE, capture_output=True,
                             text=True, timeout=30, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out or None


def load(path: str, *, backfill: bool = False) -> dict[str, Any]:
    """A result document; with ``backfill``, one written before documents had a date gets the date
    its file was last committed, written into the file (so the page never depends on git history)."""
    with open(path) as f:
        document = json.load(f)
    if backfill and not document.get("date") and (date := _committed_date(path)):
        document["date"] = date
        with open(path + ".tmp", "w") as f:
            json.dump(document, f, indent=2, default=str)
            f.write("\n")
        os.replace(path + ".tmp", path)
    return document


def record(document: dict[str, Any], results_md: str = RESULTS_MD) -> None:
    """Rewrite ``document``'s generated block in ``results_md`` (not for :data:`WHOLE_SECTIONS`)."""
    if document["benchmark"] in WHOLE_SECTIONS:
        return
    text = open(results_md).read() if os.path.exists(results_md) else "# Benchmark results\n"
    new = update(text, document)
    if new != text:
        with open(results_md + ".tmp", "w") as f:
            f.write(new)
        os.replace(results_md + ".tmp", results_md)


def _paged(name: Any, path: str, text: str, document: dict[str, Any]) -> bool:
    """Whether the page shows ``document``'s generated block: the current result of a section."""
    return (name == os.path.basename(path)[:-5] and name not in WHOLE_SECTIONS
            and _markers(name)[0] in text and "checks" in document)


def _paged_results(results_dir: str, text: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, path, document) of every result in ``results_dir`` the page ``text`` shows a block of."""
    out = []
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        document = load(path)
        name = document.get("benchmark")
        if _paged(name, path, text, document):
            out.append((name, path, document))
    return out


def regenerate(results_dir: str = RESULTS_DIR, results_md: str = RESULTS_MD) -> list[str]:
    """Rewrite the generated block of every benchmark whose section RESULTS.md has; returns their names.

    Result files without a section of their own (extra runs kept beside the current one) are skipped.
    """
    text = open(results_md).read()
    names = []
    for name, path, _ in _paged_results(results_dir, text):
        text = update(text, load(path, backfill=True))
        names.append(name)
    with open(results_md + ".tmp", "w") as f:
        f.write(text)
    os.replace(results_md + ".tmp", results_md)
    return names


def stale(results_dir: str = RESULTS_DIR, results_md: str = RESULTS_MD) -> list[str]:
    """Benchmarks whose generated block in RESULTS.md does not match their JSON result (for a test)."""
    text = open(results_md).read()
    return [name for name, _, document in _paged_results(results_dir, text) if summary(document) not in text]


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.results_page``: regenerate every section's generated block from results/."""
    del argv
    names = regenerate()
    print(f"RESULTS.md: regenerated {len(names)} sections ({', '.join(names)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
