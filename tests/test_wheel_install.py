"""The package as a user installs it: a built wheel (and an editable install) finds its migrations and example.

``ddl/`` is the only copy of the migration files in the tree, ``examples/watcher.toml`` of the
example configuration; setup.py copies both into the wheel. These tests build the project, install it into a fresh virtual environment and run
``spanner-watcher migrate`` and ``spanner-watcher ddl setup`` there, from a folder outside
the source tree, against the embedded local Spanner (the default without --project etc.).

Everything works offline: the wheel is built with ``--no-build-isolation`` by this
interpreter's setuptools, the new environment gets the project with ``--no-deps``, and a
``.pth`` file lends it this interpreter's site-packages for the dependencies (only plain
paths are read from it, so the editable install that may live there is not activated).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.venvs import overlay_env

REPO = Path(__file__).resolve().parents[1]
#: What a build needs from the source tree (a copy, so the build leaves nothing in the checkout).
BUILD_INPUTS = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "watcher", "ddl", "examples")
TIMEOUT = 300
MIGRATIONS = ("V001__watcher_checkpoints.sql", "V002__watcher_change_sets.sql", "V003__watcher_changelog.sql",
              "V004__watcher_change_stream_partitions.sql")


def _copy_source(target: Path) -> Path:
    target.mkdir()
    for name in BUILD_INPUTS:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, target / name)
    return target


def _pip(*args: str, cwd: Path) -> None:
    """Run this interpreter's pip; a failure shows pip's own output."""
    done = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=TIMEOUT)
    assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"


def _cli(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    script = python.with_name("spanner-watcher")
    env = {k: v for k, v in os.environ.items() if k not in {"SPANNER_EMULATOR_HOST", "PYTHONPATH", "PYTHONHOME"}}
    return subprocess.run([str(script), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=TIMEOUT)


@pytest.fixture(params=["wheel", "editable"])
def installed(request, tmp_path: Path) -> tuple[Path, Path]:
    """(python of a fresh environment holding the project, a work folder outside every source tree)."""
    if importlib.util.find_spec("setuptools.command.bdist_wheel") is None:
        pytest.fail("building the wheel offline needs setuptools>=70.1 here: pip install -e '.[test]'")
    source = _copy_source(tmp_path / "src")
    python = overlay_env(tmp_path / "env")
    target = ["--python", str(python), "install", "--no-deps", "--no-build-isolation", "--no-index"]
    if request.param == "wheel":
        _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(tmp_path / "dist"), str(source), cwd=tmp_path)
        wheels = sorted((tmp_path / "dist").glob("spanner_watcher-*.whl"))
        assert len(wheels) == 1, wheels
        _pip(*target, str(wheels[0]), cwd=tmp_path)
        shutil.rmtree(source)  # the installed wheel must stand alone
    else:
        _pip(*target, "-e", str(source), cwd=tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    return python, work


def test_the_installed_package_applies_its_migrations_and_prints_ddl(installed: tuple[Path, Path]):
    python, work = installed
    where = subprocess.run([str(python), "-c", "import watcher; print(watcher.__file__)"], capture_output=True, text=True,
                           cwd=work, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=TIMEOUT)
    assert where.returncode == 0 and where.stdout.startswith(str(work.parent)), \
        f"watcher should come from the install under {work.parent}, not the checkout: {where.stdout}{where.stderr}"

    version = _cli(python, "--version", cwd=work)
    assert (version.returncode, version.stdout) == (0, f"spanner-watcher {importlib.metadata.version('spanner-watcher')}\n"), \
        version.stdout + version.stderr
    example = subprocess.run([str(python), "-c", "from watcher.cli.example_config import example_config_path; "
                              "print(example_config_path())"], capture_output=True, text=True, cwd=work,
                             env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=TIMEOUT)
    assert example.returncode == 0, example.stderr
    example_file = Path(example.stdout.strip())
    assert example_file.is_file() and example_file.read_text() == (REPO / "examples" / "watcher.toml").read_text()
    package = Path(where.stdout.strip()).parent
    if "site-packages" in package.parts:   # a wheel install carries its own copy, beside the CLI
        assert example_file == package / "cli" / "examples" / "watcher.toml"
    help_text = _cli(python, "watch", "--help", cwd=work)
    unwrapped = "".join(help_text.stdout.split())   # argparse wraps the help, breaking a long path too
    assert help_text.returncode == 0 and f"anexample:{example_file})" in unwrapped, help_text.stdout

    migrate = _cli(python, "migrate", "--data-dir", str(work / "data"), cwd=work)
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    for name in MIGRATIONS:
        assert f"watcher: applied {name}" in migrate.stdout, migrate.stdout
    assert f"done: {len(MIGRATIONS)} file(s) applied" in migrate.stdout

    again = _cli(python, "migrate", "--data-dir", str(work / "data"), cwd=work)
    assert again.returncode == 0 and "applied V00" not in again.stdout, again.stdout + again.stderr

    setup = _cli(python, "ddl", "setup", "Singers", "--source", "FirstName", "--source", "LastName:STRING:not_null", cwd=work)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    assert ("ALTER TABLE `Singers` ADD COLUMN `ShardId` INT64 AS (MOD(FARM_FINGERPRINT(COALESCE(`FirstName` || ' ', '') "
            "|| `LastName`), 19)) STORED;") in setup.stdout
    assert "CREATE NULL_FILTERED INDEX `Idx_Singers_ShardId_LastUpdated` ON `Singers` (`ShardId`, `LastUpdated`);" in setup.stdout
