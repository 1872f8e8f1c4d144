"""Helpers of the command-line tests: run several independent command lines at once."""

from __future__ import annotations

import subprocess
from pathlib import Path


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
