"""Folder URLs: the one reading of where a staging folder or warehouse lives, for every side.

The staging sink (in the watcher's process), the changelog job's driver-side file access
under Spark Connect (:mod:`watcher.changelog.io.arrow_fs`) and the command line all name
folders the same ways: a plain path (absolute or relative), a ``file:`` URL in each form
Hadoop takes (``file:/p``, ``file:///p``, ``file://localhost/p``), or a URL of another
filesystem (``hdfs://``, ``gs://``, ``s3://``/``s3a://``, ``abfs://``). Plain paths and
``file:`` URLs are local; everything else is opened with ``pyarrow.fs``, and a scheme it
cannot open gives one :class:`~watcher.errors.StorageURLError` naming the URL and what is
missing.

Example:
    >>> parse("file:///data/staging").local, parse("file:/data/staging").uri
    ('/data/staging', 'file:/data/staging')
    >>> parse("s3a://bucket/staging/").uri, parse("s3a://bucket/staging").is_local
    ('s3a://bucket/staging', False)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from .errors import StorageURLError

#: A URL's scheme as Hadoop's Path takes it (two letters at least: "C:" stays a path).
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
#: Hadoop's names of a scheme -> pyarrow's.
ARROW_SCHEMES = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}
#: What pyarrow needs to open a scheme, said when it cannot (by pyarrow's name of the scheme).
SCHEME_NEEDS = {
    "gs": "pyarrow built with GCS support (the PyPI wheels have it) and Google credentials "
          "(GOOGLE_APPLICATION_CREDENTIALS or `gcloud auth application-default login`)",
    "s3": "pyarrow built with S3 support (the PyPI wheels have it) and AWS credentials",
    "hdfs": "a JVM and libhdfs for pyarrow (JAVA_HOME, HADOOP_HOME, and CLASSPATH=$(hadoop classpath --glob))",
    "viewfs": "a JVM and libhdfs for pyarrow (JAVA_HOME, HADOOP_HOME, and CLASSPATH=$(hadoop classpath --glob))",
    "abfs": "pyarrow built with Azure support and Azure credentials",
    "abfss": "pyarrow built with Azure support and Azure credentials",
}
#: Said for a scheme pyarrow has no filesystem for at all.
UNKNOWN_SCHEME = "a filesystem pyarrow.fs knows (file, hdfs, gs, s3, s3a, abfs)"
#: What Spark's JVM (Hadoop's FileSystem) needs to open a scheme, said when it cannot.
HADOOP_NEEDS = {
    "gs": "the GCS connector (com.google.cloud.bigdataoss:gcs-connector) on Spark's classpath",
    "s3a": "hadoop-aws of Spark's Hadoop version on Spark's classpath (--packages org.apache.hadoop:hadoop-aws:<version>)",
    "abfs": "hadoop-azure on Spark's classpath",
    "abfss": "hadoop-azure on Spark's classpath",
}
#: Said for a scheme Hadoop has no FileSystem for at all.
UNKNOWN_HADOOP_SCHEME = "a Hadoop FileSystem for it on Spark's classpath (spark.hadoop.fs.<scheme>.impl)"


@dataclass(frozen=True)
class FolderURL:
    """A folder as given (``text``) and as read: its scheme, its local path, its qualified URI.

    ``scheme`` is ``file`` for plain paths; ``local`` is the absolute path on this machine
    (None on other filesystems); ``uri`` is what Spark and the listings name it by: ``file:/abs``
    for local folders (as Hadoop qualifies them), else the URL without a trailing slash.
    """

    text: str
    scheme: str
    local: str | None
    uri: str

    @property
    def is_local(self) -> bool:
        return self.local is not None


def scheme_of(url: str) -> str | None:
    """The scheme of ``url``, lower case; None for a plain path (a Windows drive letter included).

    >>> scheme_of("GS://b/x"), scheme_of("/data"), scheme_of("C:/data"), scheme_of("file:/x")
    ('gs', None, None, 'file')
    """
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else None


def local_path(url: str) -> str | None:
    """The local path a folder names, in every form Hadoop takes; None for other filesystems.

    >>> [local_path(p) for p in ("/data/w", "data/w", "file:/data/w", "file:///data/w", "file://localhost/data/w")]
    ['/data/w', 'data/w', '/data/w', '/data/w', '/data/w']
    >>> local_path("file://otherhost/data/w") is None, local_path("gs://b/w") is None
    (True, True)
    """
    match = _SCHEME.match(url)
    if match is None:
        return url
    if match.group(1).lower() != "file":
        return None
    rest = url[match.end():]
    if rest.startswith("//"):  # file://host/path: only the local host is this machine
        host, _, tail = rest[2:].partition("/")
        if host not in ("", "localhost"):
            return None
        rest = "/" + tail
    return unquote(rest) or "/"


def arrow_uri(url: str) -> str:
    """``url`` with the scheme pyarrow knows it by.

    >>> arrow_uri("s3a://bucket/w"), arrow_uri("gs://b/w")
    ('s3://bucket/w', 'gs://b/w')
    """
    match = _SCHEME.match(url)
    if match and match.group(1).lower() in ARROW_SCHEMES:
        return ARROW_SCHEMES[match.group(1).lower()] + url[match.end(1):]
    return url


def parse(url: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> FolderURL:
    """Read a folder's path or URL; a relative path is taken under ``base`` (default: the working folder).

    >>> parse("staging", base="/etc/watcher").uri, parse("~x", base="/b").local
    ('file:/etc/watcher/staging', '/b/~x')
    >>> parse("")
    Traceback (most recent call last):
    ...
    watcher.errors.StorageURLError: '': no folder named: give a path or a URL (file:///..., gs://...)
    """
    text = os.fspath(url)
    if not text.strip():
        raise StorageURLError(text, None, "no folder named: give a path or a URL (file:///..., gs://...)")
    local = local_path(text)
    if local is None:
        return FolderURL(text, scheme_of(text) or "", None, text.rstrip("/") or text)
    folder = os.path.normpath(os.path.join(os.fspath(base) if base is not None else os.getcwd(), local))
    return FolderURL(text, "file", folder, f"file:{folder}")


def open_filesystem(url: str | os.PathLike[str], *, base: str | os.PathLike[str] | None = None) -> tuple[Any, str, FolderURL]:
    """The pyarrow filesystem of a folder, the folder's path on it, and the parsed URL.

    Raises :class:`~watcher.errors.StorageURLError` naming the URL and what is missing when
    pyarrow cannot open its scheme.

    >>> fs, path, folder = open_filesystem("file:///tmp/staging")
    >>> fs.type_name, path, folder.uri
    ('local', '/tmp/staging', 'file:/tmp/staging')
    >>> open_filesystem("foo://x/y")
    Traceback (most recent call last):
    ...
    watcher.errors.StorageURLError: 'foo://x/y': no filesystem for scheme 'foo': install a filesystem pyarrow.fs knows (file, hdfs, gs, s3, s3a, abfs), or give a local path or file:// URL (pyarrow: Unrecognized filesystem type in URI: foo://x/y)
    """
    import pyarrow
    import pyarrow.fs as pafs

    folder = parse(url, base=base)
    if folder.local is not None:
        return pafs.LocalFileSystem(), folder.local, folder
    target = arrow_uri(folder.text)
    try:
        fs, path = pafs.FileSystem.from_uri(target)
    except (pyarrow.ArrowException, OSError, ValueError) as exc:
        raise missing_filesystem(target, str(exc)) from None
    return fs, path.rstrip("/") or path, folder


def missing_filesystem(url: str, reason: str, *, hadoop: bool = False) -> StorageURLError:
    """The error for a folder whose filesystem pyarrow (or, with ``hadoop``, Spark's JVM) cannot open.

    >>> print(missing_filesystem("gs://b/s", "No FileSystem for scheme 'gs'", hadoop=True))
    'gs://b/s': no filesystem for scheme 'gs': install the GCS connector (com.google.cloud.bigdataoss:gcs-connector) on Spark's classpath, or give a local path or file:// URL (Spark: No FileSystem for scheme 'gs')
    """
    scheme = scheme_of(url) or ""
    needs = HADOOP_NEEDS.get(scheme, UNKNOWN_HADOOP_SCHEME) if hadoop else SCHEME_NEEDS.get(scheme, UNKNOWN_SCHEME)
    first = reason.strip().splitlines()[0] if reason.strip() else "cannot open it"
    return StorageURLError(url, scheme, f"install {needs}, or give a local path or file:// URL "
                                        f"({'Spark' if hadoop else 'pyarrow'}: {first})")
