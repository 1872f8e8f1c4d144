"""Helpers of the command-line tests: run several independent command lines at once, write a ``watch`` configuration."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any


def run_all(commands: dict[str, tuple[list[str], dict[str, str]]], *, cwd: Path,
            timeout: float) -> dict[str, subprocess.CompletedProcess]:
    """Run independent command lines (name -> (argv, env)) side by side; each pays its start-up once."""
    procs = {name: subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
             for name, (argv, env) in commands.items()}
    out = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=timeout)
        out[name] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    return out


def watch_config(path: Path, extra: str = "", **watch: Any) -> Path:
    """Write a ``watch`` configuration to ``path`` and return it: a ``[watch]`` table of ``watch``'s
    settings, reading from the beginning unless ``initial_timestamp`` says otherwise, then ``extra``
    (more TOML tables, dedented).

    >>> import tempfile
    >>> p = watch_config(Path(tempfile.mkdtemp()) / "w.toml", '''
    ...     [tables]
    ...     include = ["Singers"]''', poll_interval=0.05)
    >>> print(p.read_text())
    [watch]
    initial_timestamp = "beginning"
    poll_interval = 0.05
    <BLANKLINE>
    [tables]
    include = ["Singers"]
    """
    settings = {"initial_timestamp": "beginning", **watch}
    lines = ["[watch]", *(f"{name} = {json.dumps(value)}" for name, value in settings.items())]  # JSON scalars are TOML
    path.write_text("\n".join(lines) + "\n" + textwrap.dedent(extra))
    return path
