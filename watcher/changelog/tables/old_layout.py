"""A reader of the warehouse layout the changelog job wrote before its Delta tables, for conversion.

That layout kept Parquet folders and a commit log of its own, all under the warehouse folder:

- ``_state/manifest/<N>.json``: the committed run versions (the newest file is the warehouse's
  version ``N``; ``aborted`` lists runs that died before their commit), and per table the layers
  of its current state and its poll loops' watermarks;
- ``changelog/table_name=<T>/commit_date=<D>/*.parquet``: changelog rows, each tagged with the
  ``run_version`` that wrote it (rows of versions the manifest does not list as committed are
  invisible);
- ``changelog_superseded/*.parquet``: ``(change_id, run_version)`` of polled rows that a change
  stream's row of the same version replaced, hidden once the ``superseded_by`` run is committed;
- ``current_state/v<N>/table_name=<T>/`` (a table's base) and ``current_state/v<N>/deltas/`` (the
  keys run N changed, all tables): a key's state is its newest row over the layers (by commit
  timestamp, then the later layer);
- ``_state/processed/*.jsonl``: the staged batches each run consumed;
- ``_state/complete/<T>.json``: completeness markers (a backfill's read timestamp).

This module reads exactly what that layout's views showed, with pyarrow only (no Spark), from a
local folder or any filesystem ``pyarrow.fs`` opens. It reads, never writes.

Example:
    >>> visible = Manifest(4, aborted=(2,)).visible
    >>> [v for v in range(6) if visible(v)]
    [1, 3, 4]
    >>> split_timestamp("2024-05-01T10:00:05.123456789Z")
    (datetime.datetime(2024, 5, 1, 10, 0, 5, 123456, tzinfo=datetime.timezone.utc), 123456789)
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from ...errors import ChangelogError

MANIFEST_DIR = "_state/manifest"
ATTEMPTS_DIR = "_state/attempts"
PROCESSED_DIR = "_state/processed"
MARKER_DIR = "_state/complete"
CHANGELOG_DIR = "changelog"
SUPERSEDED_DIR = "changelog_superseded"
STATE_DIR = "current_state"
#: The newest manifest format this reader knows.
MANIFEST_FORMAT = 1
#: What the layout kept beside the rows, by folder: moved aside with them once converted. The
#: completeness markers (``_state/complete``) and ``_quarantine`` stay: the Delta layout keeps them too.
#: The manifests first: once they are moved, the rows have been converted.
FOLDERS = (MANIFEST_DIR, CHANGELOG_DIR, SUPERSEDED_DIR, STATE_DIR, ATTEMPTS_DIR, PROCESSED_DIR)

_TIMESTAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$")
_DIGITS = 12


def split_timestamp(text: str | None) -> tuple[dt.datetime | None, int | None]:
    """An exact RFC 3339 UTC timestamp as (datetime to the microsecond, nanoseconds of its second).

    >>> split_timestamp(None)
    (None, None)
    """
    if text is None:
        return None, None
    match = _TIMESTAMP.match(text)
    if match is None:
        raise ChangelogError(f"timestamp {text!r} is not RFC 3339 UTC (YYYY-MM-DDTHH:MM:SS[.fraction]Z)")
    nanos = int((match.group(2) or "").ljust(9, "0"))
    second = dt.datetime.fromisoformat(match.group(1)).replace(tzinfo=dt.UTC)
    return second.replace(microsecond=nanos // 1000), nanos


@dataclass(frozen=True)
class Manifest:
    """The committed state the newest manifest describes."""

    version: int
    committed_at: str = ""
    aborted: tuple[int, ...] = ()
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)

    def visible(self, run_version: int | None) -> bool:
        """Whether rows of ``run_version`` are committed."""
        return run_version is not None and 0 < run_version <= self.version and run_version not in self.aborted


class OldWarehouse:
    """The old layout of the warehouse folder at ``root`` on the pyarrow filesystem ``fs``."""

    def __init__(self, fs: Any, root: str) -> None:
        self.fs = fs
        self.root = root.rstrip("/")

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def _files(self, folder: str, suffix: str) -> list[str]:
        """Paths of the files under ``folder`` ending in ``suffix`` (none when it is missing), sorted."""
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self._path(folder), recursive=True, allow_not_found=True)
        return sorted(info.path for info in self.fs.get_file_info(selector)
                      if info.type == pafs.FileType.File and info.path.endswith(suffix)
                      and not info.base_name.startswith((".", "_")))

    def _text(self, path: str) -> str:
        with self.fs.open_input_stream(path) as stream:
            return stream.read().decode("utf-8")

    def manifests(self) -> dict[int, str]:
        """Run version -> path of every manifest file."""
        return {int(p.rsplit("/", 1)[-1][:-5]): p for p in self._files(MANIFEST_DIR, ".json")
                if p.rsplit("/", 1)[-1][:-5].isdigit()}

    def manifest(self) -> Manifest:
        """The newest committed manifest (version 0 when no run committed)."""
        found = self.manifests()
        if not found:
            return Manifest(0)
        newest = found[max(found)]
        try:
            doc = json.loads(self._text(newest))
        except ValueError as exc:
            raise ChangelogError(f"manifest {newest} is not valid JSON: {exc}") from None
        if doc.get("v", 1) > MANIFEST_FORMAT:
            raise ChangelogError(f"manifest {newest} has format {doc['v']}, newer than this reader knows ({MANIFEST_FORMAT})")
        return Manifest(int(doc["version"]), doc.get("committed_at", ""), tuple(doc.get("aborted", [])),
                        dict(doc.get("tables", {})))

    def committed_at(self) -> dict[int, str]:
        """Run version -> when its manifest says it committed."""
        out = {}
        for version, path in self.manifests().items():
            out[version] = json.loads(self._text(path)).get("committed_at", "")
        return out

    def _parquet_rows(self, folder: str) -> Iterator[dict[str, Any]]:
        """Rows of the Parquet files under ``folder``, with the partition values of their paths."""
        import pyarrow.parquet as pq

        for path in self._files(folder, ".parquet"):
            parts = dict(unquote(p).split("=", 1) for p in path[len(self._path(folder)) + 1:].split("/")[:-1] if "=" in p)
            with self.fs.open_input_file(path) as handle:
                rows = pq.read_table(handle).to_pylist()
            for row in rows:
                yield {**row, **parts}

    def superseded(self, committed: Manifest) -> set[tuple[str, int]]:
        """``(change_id, run_version)`` of the changelog rows committed runs replaced."""
        return {(r["change_id"], int(r["run_version"])) for r in self._parquet_rows(SUPERSEDED_DIR)
                if committed.visible(r.get("superseded_by"))}

    def changelog(self, committed: Manifest) -> Iterator[dict[str, Any]]:
        """The committed changelog rows, without those a change stream's row replaced."""
        hidden = self.superseded(committed)
        for row in self._parquet_rows(CHANGELOG_DIR):
            version = row.get("run_version")
            if committed.visible(version) and (row["change_id"], int(version or 0)) not in hidden:
                yield row

    def state(self, committed: Manifest) -> list[dict[str, Any]]:
        """Each key's state row (deleted keys included, flagged ``is_deleted``), by table then keys."""
        out = []
        for table, info in sorted(committed.tables.items()):
            base = info.get("state_version")
            layers = ([(int(base), f"{STATE_DIR}/v{int(base):0{_DIGITS}d}/table_name={table}")] if base else []) + \
                [(int(v), f"{STATE_DIR}/v{int(v):0{_DIGITS}d}/deltas") for v in info.get("state_deltas", [])]
            newest: dict[str, tuple[tuple[str, int], dict[str, Any]]] = {}
            for layer, folder in layers:
                for row in self._parquet_rows(folder):
                    row.setdefault("table_name", table)
                    if row["table_name"] != table:
                        continue
                    rank = (row.get("commit_timestamp") or "", layer)
                    if row["keys"] not in newest or rank > newest[row["keys"]][0]:
                        newest[row["keys"]] = (rank, row)
            out += [newest[k][1] for k in sorted(newest)]
        return out

    def markers(self) -> dict[str, str]:
        """Table -> read timestamp from which its state is complete (the completeness markers)."""
        out = {}
        for path in self._files(MARKER_DIR, ".json"):
            doc = json.loads(self._text(path))
            out[doc["table"]] = doc["read_timestamp"]
        return out

    def watermarks(self, committed: Manifest) -> list[dict[str, Any]]:
        """Per table: its watermark text, its loops' watermarks, and where its changelog is complete from."""
        markers = self.markers()
        return [{"table_name": table, "watermark": committed.tables.get(table, {}).get("watermark"),
                 "loops": dict(committed.tables.get(table, {}).get("loops", {})), "complete_from": markers.get(table)}
                for table in sorted(set(committed.tables) | set(markers))]

    def consumed(self, committed: Manifest) -> dict[int, list[str]]:
        """Committed run version -> the staged batches it consumed (the processed-batches log)."""
        out: dict[int, set[str]] = {}
        for path in self._files(PROCESSED_DIR, ".jsonl"):
            for line in self._text(path).splitlines():
                if line.strip():
                    entry = json.loads(line)
                    if committed.visible(int(entry["run_version"])):
                        out.setdefault(int(entry["run_version"]), set()).add(entry["batch"])
        return {version: sorted(batches) for version, batches in sorted(out.items())}
