"""Run the official Python client's own system tests against the embedded local Spanner.

googleapis/python-spanner ships ``tests/system`` in its source distribution; its CI runs them
against the official emulator with ``SPANNER_EMULATOR_HOST`` set. This tool does the same against
:class:`watcher.localspanner.server.LocalSpanner`: it downloads the sdist of the installed
``google-cloud-spanner`` version with pip (once, into a cache folder), keeps only its ``tests``
folder, starts the server in this process, runs pytest over the chosen files in a child process
and prints pass / fail / skip counts per file and the ids of the failing tests. The tests need
``google-cloud-testutils`` (``pip install google-cloud-testutils``).

Example:
    $ python -m watcher.devtools.client_system_tests                 # the default files
    $ python -m watcher.devtools.client_system_tests --files test_table_api.py --json out.json
    $ python -m watcher.devtools.client_system_tests --dialect POSTGRESQL   # the client's PostgreSQL runs
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import importlib.metadata
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

#: The files the README reports on (sessions, databases, tables, instances, DB-API, backups and their
#: database options: the client skips every backup test against an emulator, so that row counts skips only).
DEFAULT_FILES = ("test_session_api.py", "test_database_api.py", "test_table_api.py",
                 "test_instance_api.py", "test_dbapi.py", "test_backup_api.py")
#: Where the unpacked tests live unless --cache-dir says otherwise.
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "spanner-watcher" / "client-system-tests"
#: The project id the client's emulator runs use.
EMULATOR_PROJECT = "emulator-test-project"
#: Per-test limit: a hung test must not hang the run.
TEST_TIMEOUT_SECONDS = 300
#: Why tests still fail, by test id pattern (fnmatch): printed next to each failure and recorded.
KNOWN_FAILURES: dict[str, str] = {
    "tests.system.test_session_api::test_invalid_type":
        "expects FAILED_PRECONDITION for '' written to an INT64 column by a mutation (Spanner's code); the "
        "server answers INVALID_ARGUMENT, which tests/localspanner/test_value_checks.py asserts (kept)",
    "tests.system.test_session_api::test_execute_sql_w_uuid_bindings":
        "UUID type: covered by the UUID/FLOAT32/INTERVAL types work",
    "tests.system.test_dbapi.*":
        "the fixture's all_types table has a FLOAT32 column: covered by the UUID/FLOAT32/INTERVAL types work "
        "(with that column taken out, 53 of 54 pass; test_insert_all_types also writes a FLOAT32 value)",
}
#: RESULTS.md section and JSON file that ``--record`` writes (a PostgreSQL run's: ``SECTION_postgresql``).
SECTION = "client_system_tests"
#: The dialects the client's tests can create their databases in (its switch: SPANNER_DATABASE_DIALECT).
DIALECTS = ("GOOGLE_STANDARD_SQL", "POSTGRESQL")


@dataclasses.dataclass
class FileResult:
    """The outcome of one test file: counts and the failing test ids with their first message line."""

    file: str
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    emulator_skipped: int = 0
    failures: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def runnable(self) -> int:
        """Tests not skipped by the client itself (the denominator of the pass rate)."""
        return self.passed + self.failed + self.errors


def client_version() -> str:
    """The installed ``google-cloud-spanner`` version (the tests must match it)."""
    return importlib.metadata.version("google-cloud-spanner")


def unpack_tests(version: str, cache_dir: Path) -> Path:
    """Download the client's sdist (once) and unpack its ``tests`` folder; return the folder holding it."""
    root = cache_dir / f"google-cloud-spanner-{version}"
    if (root / "tests" / "system" / "conftest.py").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as download:
        subprocess.run([sys.executable, "-m", "pip", "download", f"google-cloud-spanner=={version}",
                        "--no-binary", ":all:", "--no-deps", "--quiet", "-d", download], check=True)
        (archive,) = Path(download).glob("*.tar.gz")
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if "/tests/" in m.name and m.isfile()]
            for member in members:
                # Only tests/: the sdist's own google/ package must not shadow the installed client.
                member.name = member.name.split("/", 1)[1]
            tar.extractall(root, members=members, filter="data")
    return root


def emulator_environment(emulator_host: str, dialect: str = DIALECTS[0]) -> dict[str, str]:
    """The variables the client's emulator CI sets, pointing at ``emulator_host``; its databases in ``dialect``.

    >>> emulator_environment("localhost:9010", "POSTGRESQL")["SPANNER_DATABASE_DIALECT"]
    'POSTGRESQL'
    """
    env = dict(os.environ)
    env.update({"SPANNER_EMULATOR_HOST": emulator_host, "GCLOUD_PROJECT": EMULATOR_PROJECT,
                "GOOGLE_CLOUD_PROJECT": EMULATOR_PROJECT,
                "GOOGLE_CLOUD_TESTS_CREATE_SPANNER_INSTANCE": "true"})
    if dialect != DIALECTS[0]:  # unset, the client's tests create GoogleSQL databases
        env["SPANNER_DATABASE_DIALECT"] = dialect
    return env


def section_name(dialect: str) -> str:
    """The RESULTS.md section of a run in ``dialect``.

    >>> section_name("GOOGLE_STANDARD_SQL"), section_name("POSTGRESQL")
    ('client_system_tests', 'client_system_tests_postgresql')
    """
    return SECTION if dialect == DIALECTS[0] else f"{SECTION}_{dialect.lower()}"


def run_file(root: Path, test_file: str, env: dict[str, str], extra: list[str]) -> FileResult:
    """Run one system test file with pytest in a child process and read its JUnit report."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                        f"--junitxml={report}", f"--timeout={TEST_TIMEOUT_SECONDS}", "--rootdir", str(root),
                        f"tests/system/{test_file}", *extra], cwd=root, env=env, check=False)
        return read_report(test_file, report)


def _emulator_skip(message: str) -> bool:
    """Whether a skip's reason is the client's for an emulator (its marks name the emulator or SPANNER_EMULATOR_HOST).

    >>> [_emulator_skip(m) for m in ("Backup operations not supported by emulator.", "SPANNER_EMULATOR_HOST set",
    ...                              "PostgreSQL only")]
    [True, True, False]
    """
    return "emulator" in message.lower()


def read_report(test_file: str, report: Path) -> FileResult:
    """Count outcomes in a JUnit XML report; skips the client marks emulator-only are counted apart."""
    result = FileResult(test_file)
    if not report.exists():
        result.errors += 1
        result.failures[test_file] = "pytest wrote no report"
        return result
    for case in ET.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        if outcome is None:
            result.passed += 1
        elif outcome.tag == "skipped":
            result.skipped += 1
            if _emulator_skip(outcome.get("message") or ""):
                result.emulator_skipped += 1
        else:
            if outcome.tag == "failure":
                result.failed += 1
            else:
                result.errors += 1
            message = (outcome.get("message") or "").strip().splitlines()
            result.failures[test_id] = message[0][:300] if message else outcome.tag
    return result


def reason(test_id: str) -> str | None:
    """The recorded reason a test fails (``KNOWN_FAILURES``), or None for a new failure.

    >>> reason("tests.system.test_dbapi.TestDbApi::test_ping").startswith("the fixture's")
    True
    """
    return next((why for pattern, why in KNOWN_FAILURES.items() if fnmatch.fnmatchcase(test_id, pattern)), None)


def summary(results: list[FileResult]) -> str:
    """A table of counts per file and the failing ids."""
    lines = [f"{'file':<24} {'passed':>6} {'failed':>6} {'errors':>6} {'skipped':>7} {'pass %':>7}"]
    for r in [*results, _total(results)]:
        rate = f"{100 * r.passed / r.runnable:.1f}" if r.runnable else "-"
        lines.append(f"{r.file:<24} {r.passed:>6} {r.failed:>6} {r.errors:>6} {r.skipped:>7} {rate:>7}")
    failing = [(test, why) for r in results for test, why in r.failures.items()]
    if failing:
        lines.append("failing:")
        lines.extend(f"  {test}: {why}" + (f"\n    known: {reason(test)}" if reason(test) else "")
                     for test, why in failing)
    return "\n".join(lines)


def results_markdown(results: list[FileResult], version: str, command: str, dialect: str = DIALECTS[0]) -> str:
    """The RESULTS.md section: counts per file and every failing test with its reason."""
    total = _total(results)
    section = section_name(dialect)
    lines = [f"<!-- {section}:begin -->",
             f"## {section}: the official client's system tests (google-cloud-spanner {version}) against the server"
             + (f", databases in {dialect}" if dialect != DIALECTS[0] else ""), "",
             f"Command: `{command}`. The client's own `tests/system` run as its emulator CI runs them "
             "(SPANNER_EMULATOR_HOST, GCLOUD_PROJECT=emulator-test-project, "
             "GOOGLE_CLOUD_TESTS_CREATE_SPANNER_INSTANCE=true); tests the client skips against an emulator are skipped. "
             "Pass rate = passed / (passed + failed + errors). "
             f"Skipped: {total.emulator_skipped} by the client's emulator marks, "
             f"{total.skipped - total.emulator_skipped} by its other marks (tests it does not run in this dialect "
             "or on this client version).", "",
             "| file | passed | failed | errors | skipped | pass rate |", "|---|---:|---:|---:|---:|---:|"]
    for r in [*results, total]:
        rate = f"{100 * r.passed / r.runnable:.1f}%" if r.runnable else "-"
        name = f"**{r.file}**" if r is total else r.file
        lines.append(f"| {name} | {r.passed} | {r.failed} | {r.errors} | {r.skipped} | {rate} |")
    grouped: dict[str, list[str]] = {}
    for r in results:
        for test in r.failures:
            grouped.setdefault(reason(test) or "not yet analysed: " + r.failures[test], []).append(test)
    if grouped:
        lines += ["", "Still failing, by reason:"]
        for why, tests in grouped.items():
            shown = ", ".join(f"`{t.split('::')[-1]}`" for t in tests[:6]) + (f" and {len(tests) - 6} more" if len(tests) > 6 else "")
            lines.append(f"- {len(tests)} ({shown}): {why}")
    lines += ["", f"<!-- {section}:end -->"]
    return "\n".join(lines)


def record(results: list[FileResult], version: str, command: str, results_md: Path, dialect: str = DIALECTS[0]) -> None:
    """Write the JSON results next to RESULTS.md and replace (or append) its section."""
    name = section_name(dialect)
    (results_md.parent / "results").mkdir(exist_ok=True)
    document = {"client_version": version, "command": command, "dialect": dialect,
                "files": [dataclasses.asdict(r) for r in results]}
    (results_md.parent / "results" / f"{name}.json").write_text(json.dumps(document, indent=2) + "\n")
    section = results_markdown(results, version, command, dialect)
    text = results_md.read_text() if results_md.exists() else ""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    if begin in text and end in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    results_md.write_text(text)


def _total(results: list[FileResult]) -> FileResult:
    total = FileResult("total")
    for r in results:
        for name in ("passed", "failed", "errors", "skipped", "emulator_skipped"):
            setattr(total, name, getattr(total, name) + getattr(r, name))
    return total


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; exits 0 when every runnable test passed."""
    from ..localspanner.server import LocalSpanner

    parser = argparse.ArgumentParser(prog="python -m watcher.devtools.client_system_tests", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", nargs="+", default=list(DEFAULT_FILES), help="test files under tests/system")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE, help=f"default {DEFAULT_CACHE}")
    parser.add_argument("--version", default=None, help="client version of the tests (default: the installed one)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON here")
    parser.add_argument("--record", type=Path, default=None, metavar="RESULTS_MD",
                        help="update this RESULTS.md's section and results/client_system_tests.json beside it")
    parser.add_argument("--dialect", choices=DIALECTS, default=DIALECTS[0],
                        help="the dialect of the databases the tests create (sets SPANNER_DATABASE_DIALECT; "
                             "default %(default)s)")
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest (after --), e.g. -k name")
    args = parser.parse_args(argv)
    import importlib.util

    if importlib.util.find_spec("test_utils") is None:  # else every file fails on its conftest's import, five times over
        print("client_system_tests: the client's system tests need google-cloud-testutils: "
              "pip install google-cloud-testutils (or the [dev] extra)", file=sys.stderr)
        return 2
    version = args.version or client_version()
    root = unpack_tests(version, args.cache_dir)
    results = []
    with LocalSpanner() as server:
        env = emulator_environment(server.emulator_host, args.dialect)
        for test_file in args.files:
            results.append(run_file(root, test_file, env, args.pytest_args))
            print(summary(results[-1:]).splitlines()[1], flush=True)
    print(summary(results))
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in results], indent=2) + "\n")
    if args.record:
        argv_text = " ".join(sys.argv[1:] if argv is None else argv)
        record(results, version, f"python -m watcher.devtools.client_system_tests {argv_text}".strip(), args.record,
               args.dialect)
    return 0 if all(not r.failed and not r.errors for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
