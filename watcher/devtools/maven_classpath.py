"""The runtime classpath of a Maven project that builds nothing, resolved once per digest of its pom.

The development tools run JVM programs made of published jars (a Kafka broker, Kafka Connect with
a connector): a ``pom.xml`` names them, ``mvn dependency:build-classpath`` downloads them into
``~/.m2`` and writes the classpath, which is kept in a cache folder named for the pom's digest,
so a changed pom resolves again and an unchanged one never asks Maven twice. Offline first,
online when ``~/.m2`` lacks a jar.

Example::

    jars = resolve(POM, cache_dir() / f"kafka-broker-{pom_digest(POM)}", KafkaBrokerFailed)
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from . import jvm_tools

#: Seconds Maven has to resolve a classpath (downloads included).
RESOLVE_SECONDS = 600
CLASSPATH = "classpath.txt"


def pom_digest(pom: Path) -> str:
    """The digest of ``pom``: its classpath's identity in the cache."""
    return hashlib.sha256(pom.read_bytes()).hexdigest()[:16]


def resolve(pom: Path, folder: Path, error: type[Exception], *, purpose: str = "a JVM program",
            force: bool = False) -> str:
    """The runtime classpath of ``pom``, cached in ``folder``; a failure raises ``error`` with Maven's last lines.

    Raises :class:`~watcher.devtools.jvm_tools.JvmToolsMissing` when Maven or Java is missing
    (``purpose`` names who needs them).
    """
    mvn, _ = jvm_tools.tools(purpose)
    cached = folder / CLASSPATH
    if cached.is_file() and not force:
        text = cached.read_text().strip()
        if text and all(os.path.exists(p) for p in text.split(os.pathsep)):
            return text
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f"{CLASSPATH}.{os.getpid()}.partial"
    done = _maven(mvn, pom, partial, error, offline=True)
    if done.returncode != 0:
        done = _maven(mvn, pom, partial, error, offline=False)
    if done.returncode != 0 or not partial.is_file():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise error(f"mvn dependency:build-classpath failed for {pom} (exit {done.returncode}):\n{tail}")
    os.replace(partial, cached)  # whole or not at all: runs at once each write their own file
    return cached.read_text().strip()


def _maven(mvn: str, pom: Path, output: Path, error: type[Exception], *,
           offline: bool) -> subprocess.CompletedProcess[str]:
    command = [mvn, "-q", "-B", *(["-o"] if offline else []), "-f", str(pom), "dependency:build-classpath",
               f"-Dmdep.outputFile={output}", "-Dmdep.includeScope=runtime"]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=RESOLVE_SECONDS, check=False)
    except subprocess.TimeoutExpired as exc:
        raise error(f"mvn dependency:build-classpath took more than {RESOLVE_SECONDS} s for {pom}") from exc
