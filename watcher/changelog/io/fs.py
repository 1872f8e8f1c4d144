"""Files through Hadoop's FileSystem API, reached via the Spark JVM.

The job lists staging batches, reads and writes its small files (
completeness markers, quarantine reports) and moves bad batches aside with this module,
never with Python's ``open()``: on a cluster the driver may not see the data's
filesystem, but Hadoop's FileSystem (local, HDFS, GCS, S3 connectors) always does. A Spark
Connect session has no JVM on the driver: there :mod:`.arrow_fs` takes its place
(:func:`.files.open_fs` chooses).

Example:
    >>> fs = HadoopFS(spark, "/tmp/warehouse")          # doctest: +SKIP
    >>> fs.write_text("_state/x.json", "{}")            # doctest: +SKIP
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from watcher.storage_urls import missing_filesystem

#: Writer options (``df.write.options(**NO_CHECKSUMS)``) that keep Spark's writes on the local
#: file system free of ``.crc`` side files, on the driver and on every executor: the options
#: reach the write's Hadoop configuration, which travels with the tasks. The cache is off for
#: that configuration only, or the cached checksumming file system would be handed out again.
NO_CHECKSUMS = {"fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem", "fs.file.impl.disable.cache": "true"}


@dataclass(frozen=True)
class FileEntry:
    """One listed file: its qualified URI, size in bytes and modification time (ms)."""

    uri: str
    length: int
    modified_ms: int

    @property
    def name(self) -> str:
        return self.uri.rstrip("/").rsplit("/", 1)[-1]


class RootedFolder:
    """What every folder store shares: its qualified ``root`` URI and the URIs under it."""

    root: str

    @property
    def is_local(self) -> bool:
        """The folder is on the driver's local disk (``file:``), where listing a file costs no round trip."""
        return self.root.startswith("file:")

    def uri(self, relative: str = "") -> str:
        """The qualified URI Spark reads for ``relative`` (already qualified URIs pass through)."""
        if not relative:
            return self.root
        if "://" in relative or relative.startswith("file:"):
            return relative
        return f"{self.root}/{relative.lstrip('/')}"


class HadoopFS(RootedFolder):
    """A folder (``root``) on any Hadoop filesystem; relative paths are taken under it."""

    def __init__(self, spark: Any, root: str) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()
        root_path = self._jvm.org.apache.hadoop.fs.Path(str(root))
        try:
            self._fs = root_path.getFileSystem(self._conf)
        except Exception as exc:  # noqa: BLE001 - py4j's error: no FileSystem (connector) for the scheme
            java = getattr(exc, "java_exception", None)
            raise missing_filesystem(str(root), str(java.getMessage() if java is not None else exc), hadoop=True) from None
        # Checksum side files (.crc) would only clutter the folders users look at.
        self._fs.setWriteChecksum(False)
        self.root = str(self._fs.makeQualified(root_path).toString()).rstrip("/")

    def _path(self, relative: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(self.uri(relative))

    def exists(self, relative: str) -> bool:
        return bool(self._fs.exists(self._path(relative)))

    def glob(self, pattern: str, keep: Callable[[str], bool] | None = None) -> list[FileEntry]:
        """Files matching a glob under the root, hidden (``.``/``_``) names left out, sorted by URI.

        ``keep`` tests a file's URI: only the files it keeps are looked at one by one. The URIs
        of all come from the JVM in one call, so a folder of many already processed files is
        cheap to list (each look at a file is a call into the JVM).
        """
        statuses = self._fs.globStatus(self._path(pattern))
        if statuses is None:
            return []
        uris = self._uris(statuses)
        if len(uris) != len(statuses):  # a line break in a name: take the files one by one
            uris = [str(status.getPath().toString()) for status in statuses]
        entries = []
        for index, uri in enumerate(uris):
            if uri.rstrip("/").rsplit("/", 1)[-1].startswith((".", "_")) or (keep is not None and not keep(uri)):
                continue
            status = statuses[index]
            if status.isFile():
                entries.append(FileEntry(uri, int(status.getLen()), int(status.getModificationTime())))
        return sorted(entries, key=lambda e: e.uri)

    def _uris(self, statuses: Any) -> list[str]:
        """The URIs of an array of FileStatus, fetched in one call (Scala 2.13's ArraySeq joins them)."""
        try:
            paths = self._jvm.org.apache.hadoop.fs.FileUtil.stat2Paths(statuses)
            joined = str(self._jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(paths).mkString("\n"))
        except Exception:  # noqa: BLE001 - another Scala version: the caller takes them one by one
            return []
        return joined.split("\n") if joined else []

    def glob_dirs(self, pattern: str) -> list[str]:
        """URIs of the folders matching a glob under the root, sorted."""
        statuses = self._fs.globStatus(self._path(pattern))
        return sorted(str(s.getPath().toString()) for s in (statuses or []) if s.isDirectory())

    def list_names(self, relative: str) -> list[str]:
        """Names of the entries of a folder ([] when it does not exist)."""
        path = self._path(relative)
        if not self._fs.exists(path):
            return []
        return sorted(str(s.getPath().getName()) for s in self._fs.listStatus(path))

    def read_text(self, relative: str) -> str:
        stream = self._fs.open(self._path(relative))
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def write_text(self, relative: str, text: str, *, overwrite: bool = False) -> bool:
        """Write a small file atomically (temp file + rename); False when it exists and not ``overwrite``."""
        final = self._path(relative)
        if self._fs.exists(final) and not overwrite:
            return False
        temp = self._jvm.org.apache.hadoop.fs.Path(final.getParent(), f".{final.getName()}.{uuid.uuid4().hex}.tmp")
        stream = self._fs.create(temp, True)
        try:
            self._jvm.org.apache.commons.io.IOUtils.write(text, stream, "UTF-8")
        finally:
            stream.close()
        if overwrite and self._fs.exists(final):
            self._fs.delete(final, False)
        if not self._fs.rename(temp, final):
            self._fs.delete(temp, False)
            return False
        return True

    def create_exclusive(self, relative: str) -> bool:
        """Create an empty file; False when it already exists (claims a name once)."""
        return bool(self._fs.createNewFile(self._path(relative)))

    def move(self, source_uri: str, relative: str) -> str:
        """Move a file (possibly from another filesystem) to ``relative``; returns its new URI."""
        jpath = self._jvm.org.apache.hadoop.fs.Path
        source = jpath(source_uri)
        target = self._path(relative)
        self._fs.mkdirs(target.getParent())
        source_fs = source.getFileSystem(self._conf)
        moved = source_fs.getUri().equals(self._fs.getUri()) and self._fs.rename(source, target)
        if not moved:
            self._jvm.org.apache.hadoop.fs.FileUtil.copy(source_fs, source, self._fs, target, True, self._conf)
        return str(target.toString())

    def delete(self, relative: str, *, recursive: bool = True) -> bool:
        path = self._path(relative)
        return bool(self._fs.exists(path) and self._fs.delete(path, recursive))
