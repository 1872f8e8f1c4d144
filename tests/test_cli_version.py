"""``spanner-watcher --version`` prints the installed package's version and exits 0."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from watcher.cli.main import main, package_version

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_the_installed_distributions() -> None:
    assert package_version() == importlib.metadata.version("spanner-watcher")
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert package_version() == declared  # the installed metadata is this checkout's


def test_version_option_prints_it_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"spanner-watcher {package_version()}\n"


def test_version_from_the_command_line_needs_no_subcommand() -> None:
    done = subprocess.run([sys.executable, "-m", "watcher", "--version"], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"spanner-watcher {package_version()}\n", "")
