"""Maven and Java for the development tools that run JVM programs (the Java library's watcher, a Kafka broker).

Example:
    >>> tools("a test", {"PATH": "/nowhere"})
    Traceback (most recent call last):
    ...
    watcher.devtools.jvm_tools.JvmToolsMissing: mvn and java not found on the PATH (a test needs Maven and Java 17+, e.g. apt-get install maven openjdk-17-jdk-headless)
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path


class JvmToolsMissing(RuntimeError):
    """``mvn`` or ``java`` is not installed; the message says which and how to install them."""


def tools(purpose: str, environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The paths of ``mvn`` and ``java`` (``java`` from ``$JAVA_HOME`` first), for ``purpose`` (named in the error)."""
    environ = os.environ if environ is None else environ
    home = environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home and os.access(os.path.join(home, "bin", "java"), os.X_OK) else None
    java = java or shutil.which("java", path=environ.get("PATH"))
    mvn = shutil.which("mvn", path=environ.get("PATH"))
    missing = [name for name, path in (("mvn", mvn), ("java", java)) if path is None]
    if missing:
        raise JvmToolsMissing(f"{' and '.join(missing)} not found on the PATH ({purpose} needs Maven and Java 17+, "
                              "e.g. apt-get install maven openjdk-17-jdk-headless)")
    assert mvn is not None and java is not None
    return mvn, java


def log_tail(paths: Iterable[Path], lines: int) -> str:
    """The last ``lines`` lines of each of a JVM program's log files that exists, each under its path
    (for a failure's report).

    >>> log_tail([Path("/nowhere.log")], 5)
    ''
    """
    out = []
    for path in paths:
        try:
            text = path.read_text(errors="replace").splitlines()[-lines:]
        except FileNotFoundError:
            continue
        out.append(f"--- {path} ---\n" + "\n".join(text))
    return "\n".join(out)
