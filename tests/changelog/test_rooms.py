"""The changelog package's rooms: only the job's entry points at its top, and rules free of engines.

Built from the source (``ast``), so an import hidden inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import watcher.changelog

PACKAGE = "watcher.changelog"
ROOT = Path(watcher.changelog.__file__).parent
#: The modules at the package's top: its public names, the command line, the builder API, one run, the views.
TOP = {"__init__.py", "__main__.py", "job.py", "run.py", "views.py"}
ROOMS = {"engines", "exports", "input", "io", "rules", "snapshots", "spark", "streaming", "tables"}
#: What the rules (engine-free data, rendered by both engines) may not import.
NOT_FOR_RULES = ("engines", "spark", "tables")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def _imports(path: Path) -> set[str]:
    """Every module of the package ``path`` imports (a name's module where it imports a module)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m.startswith(PACKAGE + ".")}


def test_the_top_holds_only_the_entry_points() -> None:
    assert {p.name for p in ROOT.glob("*.py")} == TOP
    assert {p.name for p in ROOT.iterdir() if p.is_dir() and p.name != "__pycache__"} == ROOMS


@pytest.mark.parametrize("room", sorted(ROOMS | {"engines/spark", "engines/driver", "spark/jvm"}))
def test_every_room_says_what_it_holds(room: str) -> None:
    assert ast.get_docstring(ast.parse((ROOT / room / "__init__.py").read_text(encoding="utf-8")))


@pytest.mark.parametrize("path", sorted((ROOT / "rules").rglob("*.py")), ids=lambda p: p.name)
def test_rules_import_no_engine_spark_plumbing_or_table(path: Path) -> None:
    forbidden = tuple(f"{PACKAGE}.{room}" for room in NOT_FOR_RULES)
    assert sorted(m for m in _imports(path) if m.startswith(forbidden)) == []


@pytest.mark.parametrize("path", sorted((ROOT / "input").rglob("*.py")), ids=lambda p: p.name)
def test_input_imports_no_engine(path: Path) -> None:
    """Engines read their input; the readers do not know which engine runs."""
    assert sorted(m for m in _imports(path) if m.startswith(f"{PACKAGE}.engines")) == []


@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_an_engine_imports_no_other_engine(engine: str) -> None:
    """What two engines share sits beside them (engines/base, engines/tally), not inside one of them."""
    other = f"{PACKAGE}.engines.{'spark' if engine == 'driver' else 'driver'}"
    found = {p.name: sorted(m for m in _imports(p) if m.startswith(other))
             for p in sorted((ROOT / "engines" / engine).rglob("*.py"))}
    assert {name: bad for name, bad in found.items() if bad} == {}


def test_nothing_outside_the_changelog_imports_an_engine() -> None:
    """The sinks and the CLI use the rules and the job's entry points, never an engine's internals."""
    package = ROOT.parent
    found = {}
    for path in package.rglob("*.py"):
        if ROOT in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        bad = sorted(m for m in names if "changelog.engines" in m)
        if bad:
            found[str(path.relative_to(package))] = bad
    assert found == {}


def test_the_zip_shipped_to_executors_holds_the_whole_package():
    """A moved module must not change what executors get: every module a task imports is in the zip."""
    import zipfile

    from watcher.changelog.spark import cluster

    with zipfile.ZipFile(cluster.package_zip()) as archive:
        names = set(archive.namelist())
    package = ROOT.parent
    expected = {f"watcher/{p.relative_to(package).as_posix()}" for p in package.rglob("*.py")
                if p.relative_to(package).parts[0] not in cluster.LEFT_OUT and "__pycache__" not in p.parts}
    assert "watcher/__init__.py" in names and "watcher/changelog/spark/cluster.py" in names
    assert expected == {n for n in names if n.endswith(".py")}
