"""The jar of the package's JVM functions: compiled from the sources beside this module, cached.

The jar is built once per source digest with the JDK's ``javac`` (``--release 17``, the oldest
Java Spark 4 runs on) against pyspark's ``spark-sql-api`` jar, the only Spark classes the
sources use, and zipped by Python (no ``jar`` tool needed). It lands in the cache folder
(:func:`cache_dir`) under a name holding the digest, by an atomic rename: processes building
at once each write their own copy and one wins, and an edited source gets a jar of its own.

:func:`main` builds it and prints its path (``run.sh setup`` calls it, so that no job pays
the few seconds of ``javac``).

Example:
    >>> jar_name("0123456789abcdef").endswith(".jar")
    True
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path

#: The Java sources compiled into the jar (this folder's).
SOURCES = ("OldValues.java",)
_HERE = Path(__file__).resolve().parent
_JAVAC_SECONDS = 300


class JarUnavailable(RuntimeError):
    """The jar cannot be built here; the message says what is missing and what to do."""


def source_digest() -> str:
    """A digest of the sources: the jar's identity."""
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update(name.encode() + b"\0" + (_HERE / name).read_bytes())
    return digest.hexdigest()[:16]


def jar_name(digest: str) -> str:
    """The cached jar's file name for sources of ``digest``."""
    return f"spanner-watcher-functions-{digest}.jar"


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where built jars are kept: ``$SPANNER_WATCHER_CACHE``, else ``$XDG_CACHE_HOME/spanner-watcher``,
    else ``~/.cache/spanner-watcher``.

    >>> str(cache_dir({"SPANNER_WATCHER_CACHE": "/var/cache/sw"}))
    '/var/cache/sw'
    >>> str(cache_dir({"XDG_CACHE_HOME": "/x", "HOME": "/home/u"}))
    '/x/spanner-watcher'
    """
    environ = os.environ if environ is None else environ
    if environ.get("SPANNER_WATCHER_CACHE"):
        return Path(environ["SPANNER_WATCHER_CACHE"])
    if environ.get("XDG_CACHE_HOME") or environ.get("HOME"):
        return Path(environ.get("XDG_CACHE_HOME") or os.path.join(environ["HOME"], ".cache")) / "spanner-watcher"
    return Path(tempfile.gettempdir()) / f"spanner-watcher-{os.getuid()}"


def find_javac(environ: Mapping[str, str] | None = None) -> str | None:
    """The JDK compiler: ``$JAVA_HOME/bin/javac``, else ``javac`` on the PATH."""
    environ = os.environ if environ is None else environ
    home = environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "javac"), os.X_OK):
        return os.path.join(home, "bin", "javac")
    return shutil.which("javac", path=environ.get("PATH"))


def spark_api_jar() -> Path:
    """pyspark's ``spark-sql-api`` jar (it holds ``org.apache.spark.sql.api.java.UDF2``)."""
    import pyspark

    folders = [Path(pyspark.__file__).resolve().parent / "jars"]
    if os.environ.get("SPARK_HOME"):
        folders.append(Path(os.environ["SPARK_HOME"]) / "jars")
    for folder in folders:
        found = sorted(folder.glob("spark-sql-api_*.jar"))
        if found:
            return found[-1]
    raise JarUnavailable(f"no spark-sql-api jar in {', '.join(str(f) for f in folders)}")


def jar_path() -> Path:
    """The jar of the current sources, built first when the cache lacks it.

    Raises :class:`JarUnavailable` (saying what is missing) when it cannot be built.
    """
    digest = source_digest()
    folder = cache_dir()
    target = folder / jar_name(digest)
    try:
        folder.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError as exc:
        raise JarUnavailable(f"cannot create the cache folder {folder}: {exc.strerror}; "
                             "set SPANNER_WATCHER_CACHE to a writable folder") from exc
    trusted(folder)
    if target.is_file():
        return trusted(target)
    return build(target)


def trusted(path: Path) -> Path:
    """``path`` if only its owner, this user (or root), can have written it: the jar runs in the
    driver and on every executor, so a jar or folder that others may write is refused.
    Raises :class:`JarUnavailable` saying which path and why."""
    info = path.stat()
    if info.st_uid not in (os.getuid(), 0):
        raise JarUnavailable(f"{path} belongs to another user (uid {info.st_uid}); set SPANNER_WATCHER_CACHE "
                             "to a folder of yours")
    if info.st_mode & 0o022:
        raise JarUnavailable(f"{path} is writable by others (mode {info.st_mode & 0o777:o}); set "
                             "SPANNER_WATCHER_CACHE to a folder only you can write")
    return path


def sweep_partials(folder: Path, older_than: float = 3600.0) -> list[Path]:
    """Remove jars left half-written in ``folder`` by builds that died (``*.partial`` files
    older than ``older_than`` seconds: younger ones may be another process's build); returns them."""
    removed = []
    now = time.time()
    for path in folder.glob("*.partial"):
        try:
            if now - path.stat().st_mtime > older_than:
                path.unlink()
                removed.append(path)
        except OSError:  # gone already (another process swept it), or not ours to remove
            continue
    return removed


def build(target: Path) -> Path:
    """Compile :data:`SOURCES` into the jar ``target`` (written whole, then renamed into place)."""
    sweep_partials(target.parent)
    javac = find_javac()
    if javac is None:
        raise JarUnavailable("javac was not found (set JAVA_HOME or put a JDK's bin on the PATH; "
                             "e.g. apt-get install openjdk-17-jdk-headless)")
    with tempfile.TemporaryDirectory(prefix="spanner-watcher-javac-") as work:
        classes = Path(work) / "classes"
        command = [javac, "--release", "17", "-nowarn", "-encoding", "UTF-8", "-cp", str(spark_api_jar()),
                   "-d", str(classes), *(str(_HERE / name) for name in SOURCES)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=_JAVAC_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise JarUnavailable(f"javac could not run: {exc}") from exc
        if done.returncode != 0:
            first = (done.stderr or done.stdout).strip().splitlines()[:1]
            raise JarUnavailable(f"javac failed on {', '.join(SOURCES)}: {first[0] if first else done.returncode}")
        fd, partial = tempfile.mkstemp(prefix=target.name + ".", suffix=".partial", dir=target.parent)
        os.close(fd)
        try:
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
                for path in sorted(classes.rglob("*.class")):
                    archive.write(path, path.relative_to(classes).as_posix())
            os.chmod(partial, 0o644)  # mkstemp's 0600 would keep it from other users' Spark
            os.replace(partial, target)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
    return target


def main() -> int:
    """Build the jar (when missing) and print its path; exit 1 with the reason when it cannot be built."""
    try:
        print(jar_path())
    except (JarUnavailable, OSError) as exc:
        print(f"spanner-watcher: JVM functions not built: {exc}; the changelog uses its SQL path (slower)",
              file=sys.stderr)
        return 1
    return 0

