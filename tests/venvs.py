"""Fresh virtual environments for tests of the package as installed, built offline from this interpreter's.

:func:`overlay_env` makes an environment whose own site-packages is empty and whose
dependencies come from this interpreter's site-packages through a ``.pth`` file (only plain
paths are read from it, so an editable install living there is not activated). What is
installed into the new environment comes first on its path, so a test can put the project,
or another version of one dependency, in front of everything else.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

TIMEOUT = 300


def overlay_env(path: Path) -> Path:
    """Create the environment at ``path``; its python's path."""
    try:
        venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(path)
    except Exception as exc:  # noqa: BLE001 - any reason the platform cannot make a venv
        pytest.skip(f"cannot create a virtual environment here: {exc}")
    python = path / ("Scripts" if os.name == "nt" else "bin") / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=TIMEOUT).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "spanner_watcher_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    return python


def pip_into(python: Path, *args: str, cwd: Path) -> None:
    """This interpreter's pip, installing into the environment of ``python``; a failure shows pip's output."""
    done = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "--python", str(python),
                           *args], capture_output=True, text=True, cwd=cwd, timeout=TIMEOUT)
    assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
