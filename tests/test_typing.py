"""The public API as type checkers see it: ``from watcher import X`` gives X's real type, and mypy
passes on the public modules with the project's settings.

mypy runs in this process (``mypy.api.run``) with its cache in a folder of the system's temporary
directory (not the checkout's), kept between runs: mypy checks each cached module against its source,
so a warm cache gives the same report as a cold one, in a second instead of a minute's analysis
of the Spanner client's and protobuf's modules.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

import watcher

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "pyproject.toml"


@pytest.fixture(scope="module")
def mypy_cache() -> Path:
    version = importlib.metadata.version("mypy")
    return Path(tempfile.gettempdir()) / f"spanner-watcher-mypy-{version}"


def run_mypy(cache: Path, *args: str) -> tuple[str, int]:
    """mypy's report and exit status for ``args``, with the project's configuration, from the checkout's root."""
    out, err, status = mypy_api.run(["--config-file", str(CONFIG), "--cache-dir", str(cache),
                                     "--no-error-summary", "--hide-error-context", "--no-pretty", *args])
    return out + err, status


def revealed_types(report: str) -> dict[int, str]:
    """line number -> the type a ``reveal_type`` on that line showed."""
    return {int(m[1]): m[2] for m in re.finditer(r':(\d+): note: Revealed type is "(.*)"', report)}


def type_checking_imports() -> dict[str, str]:
    """name -> module (relative to the package) of every import under ``if TYPE_CHECKING:`` in watcher/__init__.py."""
    tree = ast.parse((ROOT / "watcher" / "__init__.py").read_text())
    blocks = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    assert len(blocks) == 1, "watcher/__init__.py: expected one `if TYPE_CHECKING:` block"
    names: dict[str, str] = {}
    for node in blocks[0].body:
        assert isinstance(node, ast.ImportFrom) and node.level == 1, f"line {node.lineno}: not a `from .module import` line"
        for alias in node.names:
            assert alias.asname is None, f"line {node.lineno}: {alias.name} imported under another name"
            names[alias.name] = str(node.module)
    return names


def test_the_type_checking_imports_are_the_lazy_exports() -> None:
    assert type_checking_imports() == watcher._EXPORTS
    assert watcher.__all__ == sorted(watcher._EXPORTS)


def test_every_export_resolves_from_the_module_named() -> None:
    for name, module in watcher._EXPORTS.items():
        assert getattr(watcher, name) is getattr(sys.modules[f"watcher.{module}"], name), name


def test_importing_watcher_loads_none_of_its_modules() -> None:
    # The CLI imports watcher: the Spanner client and the capture modules load only when a name is used.
    code = "import sys, watcher; print(sorted(m for m in sys.modules if m.startswith(('watcher.', 'google.cloud'))))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


SNIPPET = """\
from watcher import (ALL, MIN_TIMESTAMP, Change, ChangeSetWatcher, ChangeStreamWatcher, CommitTimestampRepository,
                     DatabaseWatcher, FixedShardProvider, HistoryWatcher, KafkaSink, Sink, SpannerCommitTimestampRepository,
                     SpannerProgressStore, TableWatcher, WatcherError, attach_sinks, connect)
reveal_type(TableWatcher)
reveal_type(DatabaseWatcher)
reveal_type(ChangeStreamWatcher)
reveal_type(Change)
reveal_type(FixedShardProvider)
reveal_type(CommitTimestampRepository)
reveal_type(Sink)
reveal_type(KafkaSink)
reveal_type(WatcherError)
reveal_type(attach_sinks)
reveal_type(MIN_TIMESTAMP)
reveal_type(ALL)
reveal_type(connect)
reveal_type(ChangeSetWatcher)
reveal_type(HistoryWatcher)
reveal_type(SpannerCommitTimestampRepository)
reveal_type(SpannerProgressStore)
"""

DATABASE = "google.cloud.spanner_v1.database.Database"
#: line of SNIPPET -> what the type mypy reveals there must contain (a class shows as its constructor)
EXPECTED = {
    4: (f"def (database: {DATABASE},", "-> watcher.capture.table_watcher.TableWatcher"),
    5: (f"def (database: {DATABASE},", "-> watcher.capture.database_watcher.DatabaseWatcher"),
    6: (f"def (database: {DATABASE},", "-> watcher.capture.change_streams.watcher.ChangeStreamWatcher"),
    7: ("-> watcher.model.Change",),
    8: ("-> watcher.capture.shards.FixedShardProvider",),
    9: ("def () -> watcher.checkpoints.base.CommitTimestampRepository",),
    10: ("def () -> watcher.sinks.base.Sink",),
    11: ("-> watcher.sinks.kafka.KafkaSink",),
    12: ("-> watcher.errors.WatcherError",),
    13: ("def (watcher: watcher.capture.base.Watcher, sinks: typing.Iterable[watcher.sinks.base.Sink])",),
    14: ("google.api_core.datetime_helpers.DatetimeWithNanoseconds",),
    15: ("watcher.capture.table_settings._All",),
    16: ("def (project: str, instance: str, database: str,", f"-> {DATABASE}"),
    17: (f"def (database: {DATABASE},", "-> watcher.capture.helper_tables.change_sets.ChangeSetWatcher"),
    18: (f"def (database: {DATABASE},", "-> watcher.capture.helper_tables.history.HistoryWatcher"),
    19: (f"def (database: {DATABASE},", "-> watcher.checkpoints.spanner.SpannerCommitTimestampRepository"),
    20: (f"def (database: {DATABASE},", "-> watcher.capture.change_streams.spanner_progress.SpannerProgressStore"),
}


def test_names_imported_from_watcher_have_their_real_types(mypy_cache: Path, tmp_path: Path) -> None:
    snippet = tmp_path / "uses_watcher.py"
    snippet.write_text(SNIPPET)
    report, _ = run_mypy(mypy_cache, str(snippet))
    revealed = revealed_types(report)
    assert sorted(revealed) == sorted(EXPECTED), report
    for line, fragments in EXPECTED.items():
        for fragment in fragments:
            assert fragment in revealed[line], f"line {line}: {SNIPPET.splitlines()[line - 1]}: {revealed[line]}"


def test_closed_sets_of_change_are_literal_types(mypy_cache: Path, tmp_path: Path) -> None:
    snippet = tmp_path / "uses_change.py"
    snippet.write_text("""\
from watcher import MIN_TIMESTAMP, Change
def show(change: Change) -> None:
    reveal_type(change.mod_type)
    reveal_type(change.value_capture_type)
Change("Singers", (1,), {}, MIN_TIMESTAMP, mod_type="UPSERT")
Change("Singers", (1,), {}, MIN_TIMESTAMP, mod_type="DELETE", value_capture_type="NEW_VALUES")
""")
    report, status = run_mypy(mypy_cache, str(snippet))
    revealed = revealed_types(report)
    assert revealed[3] == "Literal['INSERT'] | Literal['UPDATE'] | Literal['DELETE'] | None", report
    assert revealed[4].startswith("Literal['NEW_ROW'] | Literal['NEW_VALUES'] |"), report
    errors = [line for line in report.splitlines() if ": error:" in line]
    assert len(errors) == 1 and ":5: error:" in errors[0] and "'UPSERT'" in errors[0], report
    assert status == 1


def public_modules() -> list[str]:
    """The files of the public API's modules: pyproject.toml's mypy override that holds them to full annotations."""
    overrides = tomllib.loads(CONFIG.read_text())["tool"]["mypy"]["overrides"]
    (modules,) = [o["module"] for o in overrides if o.get("disallow_untyped_defs")]
    paths = []
    for module in modules:
        path = ROOT / module.replace(".", "/")
        paths.append(str(path / "__init__.py" if path.is_dir() else path.with_suffix(".py")))
    return paths


def test_mypy_passes_on_the_public_modules(mypy_cache: Path) -> None:
    modules = public_modules()
    assert str(ROOT / "watcher" / "__init__.py") in modules and len(modules) > 20
    report, status = run_mypy(mypy_cache, *modules)
    assert (status, report.strip()) == (0, ""), report
