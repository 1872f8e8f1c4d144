"""The watcher's core tests on the oldest google-cloud-spanner that pyproject.toml allows.

A fresh environment gets that client version in front of this interpreter's packages (the
rest of the dependencies are shared, see tests/venvs.py) and runs the core tests in a child
pytest against the same Spanner as this run (the tests that need the embedded server's own
extras skip there, as against any server named by SPANNER_EMULATOR_HOST).
"""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

from tests.venvs import TIMEOUT, overlay_env, pip_into

REPO = Path(__file__).resolve().parents[1]
#: Capture, checkpoints and the client wrapper: what every user of the core runs.
CORE_TESTS = ("tests/watcher/test_spanner_client.py", "tests/watcher/test_checkpoints.py", "tests/watcher/test_table_watcher.py",
              "tests/watcher/test_database_watcher.py", "tests/watcher/test_polling.py", "tests/watcher/test_null_keys.py",
              "tests/watcher/test_change_stream_watcher.py")


def oldest_client_version() -> str:
    """The lower bound pyproject.toml gives google-cloud-spanner (its upper bound must be there too)."""
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    spec = next(d for d in dependencies if re.match(r"google-cloud-spanner\b", d))
    floor = re.search(r">=\s*([0-9][0-9.]*)", spec)
    assert floor and re.search(r"<\s*[0-9]", spec), f"google-cloud-spanner needs a lower and an upper bound: {spec!r}"
    return floor.group(1)


def test_the_core_tests_pass_on_the_oldest_supported_client(tmp_path, _server):
    version = oldest_client_version()
    python = overlay_env(tmp_path / "env")
    pip_into(python, "install", "--no-deps", f"google-cloud-spanner=={version}", cwd=tmp_path)
    found = subprocess.run([str(python), "-c", "import google.cloud.spanner_v1 as s; print(s.__version__)"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=TIMEOUT)
    assert found.stdout.strip() == version, found.stderr
    # The child talks to this run's Spanner (SPANNER_EMULATOR_HOST, set by the _server fixture when embedded).
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    done = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *CORE_TESTS],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
    assert done.returncode == 0, f"core tests on google-cloud-spanner {version}:\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    assert re.search(r"\d+ passed", done.stdout), done.stdout[-2000:]
