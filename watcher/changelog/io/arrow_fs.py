"""Files through pyarrow's filesystem layer, for sessions whose driver has no JVM (Spark Connect).

A Connect client cannot reach Hadoop's FileSystem API, so the job's small files (completeness
markers, quarantine reports) and its listings go through
``pyarrow.fs`` instead, which reaches the same storage as the Spark server for local paths
and ``file:`` URLs (same machine or a shared mount), ``hdfs://`` (with libhdfs), ``gs://`` and
``s3://``/``s3a://`` (with the user's credentials). :class:`ArrowFS` has the methods of
:class:`.fs.HadoopFS`, and hands out URIs Spark reads (``file:/abs/path`` for local files, as
Hadoop qualifies them; other URLs keep the scheme the user gave, e.g. ``s3a://``).

Guarantees: on a local (or mounted) filesystem a small file is written to a temporary name
and linked into place, so it appears whole and never replaces another (as Hadoop's rename);
on object stores, which have no atomic no-overwrite rename, :meth:`ArrowFS.write_text` and
:meth:`ArrowFS.create_exclusive` check and then write, which is safe for one job at a time.

The folder URLs are read by :mod:`watcher.storage_urls`, as the staging sink reads them.

Example:
    >>> local_path("file:///data/w"), local_path("file:/data/w"), local_path("gs://b/w") is None
    ('/data/w', '/data/w', True)
    >>> arrow_uri("s3a://bucket/w")
    's3://bucket/w'
"""

from __future__ import annotations

import fnmatch
import os
import re
import uuid
from collections.abc import Callable
from typing import Any

from watcher.storage_urls import arrow_uri, local_path, open_filesystem

from .fs import FileEntry, RootedFolder

_GLOB_CHARS = re.compile(r"[*?\[]")

__all__ = ["ArrowFS", "arrow_uri", "local_path"]  # the URL readers live in watcher.storage_urls, used by both sides


class ArrowFS(RootedFolder):
    """A folder (``root``) on any filesystem pyarrow reaches; relative paths are taken under it."""

    def __init__(self, root: str) -> None:
        import pyarrow.fs as pafs

        self._pafs = pafs
        self._fs: Any
        self._fs, self._base, folder = open_filesystem(str(root))  # StorageURLError for a scheme pyarrow lacks
        self.root = folder.uri

    def _path(self, relative: str) -> str:
        """The pyarrow path of ``relative`` (or of a URI under the root)."""
        if "://" in relative or relative.startswith("file:"):
            if relative.startswith(self.root + "/") or relative == self.root:
                relative = relative[len(self.root):]
            else:
                local = local_path(relative)
                return os.path.abspath(local) if local is not None else self._pafs.FileSystem.from_uri(arrow_uri(relative))[1]
        return f"{self._base}/{relative.lstrip('/')}".rstrip("/")

    def _to_uri(self, path: str) -> str:
        return self.root + path[len(self._base):] if path.startswith(self._base) else path

    def _info(self, path: str) -> Any:
        return self._fs.get_file_info(path)

    def exists(self, relative: str) -> bool:
        return self._exists(self._path(relative))

    def _exists(self, path: str) -> bool:
        return bool(self._info(path).type != self._pafs.FileType.NotFound)

    def _match(self, pattern: str) -> list[Any]:
        """FileInfos of the paths matching a glob (``*``, ``?``, ``[...]`` within one path segment)."""
        found = [self._base]
        for segment in pattern.strip("/").split("/"):
            nxt: list[str] = []
            for folder in found:
                if not _GLOB_CHARS.search(segment):
                    nxt.append(f"{folder}/{segment}")
                    continue
                info = self._info(folder)
                if info.type != self._pafs.FileType.Directory:
                    continue
                listed = self._fs.get_file_info(self._pafs.FileSelector(folder, recursive=False))
                nxt += [i.path for i in listed if fnmatch.fnmatchcase(i.base_name, segment)]
            found = nxt
        infos = self._fs.get_file_info(found) if found else []
        return [i for i in infos if i.type != self._pafs.FileType.NotFound]

    def glob(self, pattern: str, keep: Callable[[str], bool] | None = None) -> list[FileEntry]:
        """Files matching a glob under the root, hidden (``.``/``_``) names left out, sorted by URI."""
        entries = []
        for info in self._match(pattern):
            uri = self._to_uri(info.path)
            if info.base_name.startswith((".", "_")) or (keep is not None and not keep(uri)):
                continue
            if info.type == self._pafs.FileType.File:
                modified = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
                entries.append(FileEntry(uri, int(info.size or 0), int(modified)))
        return sorted(entries, key=lambda e: e.uri)

    def glob_dirs(self, pattern: str) -> list[str]:
        """URIs of the folders matching a glob under the root, sorted."""
        return sorted(self._to_uri(i.path) for i in self._match(pattern) if i.type == self._pafs.FileType.Directory)

    def list_names(self, relative: str) -> list[str]:
        """Names of the entries of a folder ([] when it does not exist)."""
        path = self._path(relative)
        if self._info(path).type != self._pafs.FileType.Directory:
            return []
        return sorted(i.base_name for i in self._fs.get_file_info(self._pafs.FileSelector(path, recursive=False)))

    def read_text(self, relative: str) -> str:
        return self.read_bytes(relative).decode("utf-8")

    def read_bytes(self, relative: str) -> bytes:
        """A file's bytes (``relative``, or a URI under the root)."""
        with self._fs.open_input_stream(self._path(relative)) as stream:
            return bytes(stream.read())

    def write_text(self, relative: str, text: str, *, overwrite: bool = False) -> bool:
        """Write a small file whole (temp file, then into place); False when it exists and not ``overwrite``."""
        final = self._path(relative)
        if self._exists(final) and not overwrite:
            return False
        parent = final.rsplit("/", 1)[0]
        self._fs.create_dir(parent, recursive=True)
        temp = f"{parent}/.{final.rsplit('/', 1)[1]}.{uuid.uuid4().hex}.tmp"
        with self._fs.open_output_stream(temp) as stream:
            stream.write(text.encode("utf-8"))
        if isinstance(self._fs, self._pafs.LocalFileSystem):
            if overwrite:
                os.replace(temp, final)
                return True
            try:
                os.link(temp, final)  # atomic, and never replaces a file another writer put there
            except FileExistsError:
                return False
            finally:
                os.unlink(temp)
            return True
        if overwrite and self._exists(final):
            self._fs.delete_file(final)
        self._fs.move(temp, final)
        return True

    def create_exclusive(self, relative: str) -> bool:
        """Create an empty file; False when it already exists (claims a name once)."""
        path = self._path(relative)
        self._fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        if isinstance(self._fs, self._pafs.LocalFileSystem):
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            except FileExistsError:
                return False
            return True
        if self._exists(path):
            return False
        with self._fs.open_output_stream(path):
            pass
        return True

    def move(self, source_uri: str, relative: str) -> str:
        """Move a file (possibly from another filesystem) to ``relative``; returns its new URI."""
        target = self._path(relative)
        self._fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
        if source_uri.startswith(self.root + "/") or local_path(source_uri) is not None and self.is_local:
            self._fs.move(self._path(source_uri), target)
        else:
            source_fs, source = self._pafs.FileSystem.from_uri(arrow_uri(source_uri))
            self._pafs.copy_files(source, target, source_filesystem=source_fs, destination_filesystem=self._fs)
            source_fs.delete_file(source)
        return self._to_uri(target)

    def read_parquet(self, folder: str, columns: list[str] | None = None, *, threads: bool = False) -> Any:
        """The rows of a folder's Parquet files (hidden names left out) as one Arrow table, in each
        file's own types (Spark's INT96 timestamps read as nanoseconds); None when it does not exist.
        ``columns``: only these (each file must have them). ``threads``: decode on pyarrow's threads
        (else on the caller's thread alone, at its priority)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = self._path(folder)
        if self._info(path).type != self._pafs.FileType.Directory:
            return None
        files = sorted(i.path for i in self._fs.get_file_info(self._pafs.FileSelector(path, recursive=False))
                       if i.type == self._pafs.FileType.File and i.base_name.endswith(".parquet")
                       and not i.base_name.startswith((".", "_")))
        tables = [pq.read_table(f, columns=columns, filesystem=self._fs, use_threads=threads) for f in files]
        return pa.concat_tables(tables, promote_options="permissive") if tables else None

    def write_parquet(self, table: Any, relative: str) -> None:
        """Write an Arrow table as one Parquet file in Spark's types (timestamps as INT96, snappy)."""
        import pyarrow.parquet as pq

        path = self._path(relative)
        self._fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        pq.write_table(table, path, filesystem=self._fs, compression="snappy", use_deprecated_int96_timestamps=True)

    def delete(self, relative: str, *, recursive: bool = True) -> bool:
        path = self._path(relative)
        info = self._info(path)
        if info.type == self._pafs.FileType.NotFound:
            return False
        if info.type == self._pafs.FileType.Directory:
            if not recursive and self._fs.get_file_info(self._pafs.FileSelector(path, recursive=False)):
                return False
            self._fs.delete_dir(path)
        else:
            self._fs.delete_file(path)
        return True


def read_with_pyarrow(fs: Any) -> ArrowFS | None:
    """``fs`` when the job already reaches it through pyarrow (the driver's own disk, Spark Connect),
    so that the driver may read its files directly; None for a folder reached through Hadoop's
    filesystem (``s3a://``, ``hdfs://``), whose credentials may be in Hadoop's configuration alone.

    >>> read_with_pyarrow(ArrowFS("/tmp")) is not None, read_with_pyarrow(object())
    (True, None)
    """
    return fs if isinstance(fs, ArrowFS) else None
