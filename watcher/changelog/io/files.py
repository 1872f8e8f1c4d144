"""The filesystem of a job's folders: Hadoop's through the JVM, or pyarrow's.

Every job reaches its staging folder and warehouse through :func:`open_fs`, which gives a
:class:`FileStore`: :class:`.arrow_fs.ArrowFS` for a folder on the driver's own disk and on a
Spark Connect session (the driver has no JVM; pyarrow reaches the same storage), else
:class:`.fs.HadoopFS` (the driver's JVM reaches every filesystem Spark is configured for).

Example:
    >>> fs = open_fs(spark, "/data/warehouse")          # doctest: +SKIP
    >>> fs.write_text("_state/x.json", "{}")            # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from watcher.storage_urls import local_path

from ..spark.connect import is_connect
from .arrow_fs import ArrowFS
from .fs import FileEntry, HadoopFS

__all__ = ["FileEntry", "FileStore", "open_fs"]


class FileStore(Protocol):
    """A folder (``root``) of a filesystem; relative paths are taken under it. Not thread-safe."""

    root: str

    @property
    def is_local(self) -> bool: ...

    def uri(self, relative: str = "") -> str: ...

    def exists(self, relative: str) -> bool: ...

    def glob(self, pattern: str, keep: Callable[[str], bool] | None = None) -> list[FileEntry]: ...

    def glob_dirs(self, pattern: str) -> list[str]: ...

    def list_names(self, relative: str) -> list[str]: ...

    def read_text(self, relative: str) -> str: ...

    def write_text(self, relative: str, text: str, *, overwrite: bool = False) -> bool: ...

    def create_exclusive(self, relative: str) -> bool: ...

    def move(self, source_uri: str, relative: str) -> str: ...

    def delete(self, relative: str, *, recursive: bool = True) -> bool: ...


def open_fs(spark: Any, root: str) -> FileStore:
    """The folder ``root`` (a path or any URL Spark takes) for jobs on ``spark``.

    A folder on the driver's own disk goes through pyarrow on any session: listing a thousand
    batch files through the JVM costs a call into it per file's facts; pyarrow lists them
    at a fraction of that.
    """
    if local_path(str(root)) is not None:
        return ArrowFS(root)
    from ..spark.session import started

    spark = started(spark)  # a URL: the session's kind decides
    if is_connect(spark):
        return ArrowFS(root)
    return HadoopFS(spark, root)
