"""Reading staged batches: list the new ones, parse them with Spark, set bad files aside.

A batch file is ``<staging>/table=<T>/<batch_id>.jsonl`` (:mod:`watcher.staging.contract`).
Files are listed with the job's file store and read by Spark's JSON reader, so the
job runs unchanged on a cluster. A file is *bad* when it is empty, when a line is not a
valid staging record (a truncated or corrupt file; a change-stream record without its
identity), when it was written by a newer
staging format, or when its ``seq`` numbers are not 0..n-1 (the contract's invariants).
Bad files are moved whole into ``<warehouse>/_quarantine/table=<T>/`` with a
``.report.json`` next to each, naming the file and the reason; the rest of the input is
processed. A batch is known by its name,
``table=<T>/<file name>`` (:func:`watcher.staging.contract.batch_name`), wherever staging lives.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from watcher.staging.contract import (
    BATCH_GLOB,
    BATCH_NAME_PATTERN,
    READ_FORMAT,
    REQUIRED_FIELDS,
    STREAM_FORMAT,
    STREAM_REQUIRED_FIELDS,
    TIMESTAMP_PATTERN,
    VALUE_CAPTURE_TYPES,
    batch_name,
)

from ..io.files import FileEntry, FileStore
from ..rules import records
from ..rules.batch_seq import seq_ok
from ..rules.classify import INPUT_MOD_TYPES, sql_literal
from ..spark.session import temporary_conf

QUARANTINE_DIR = "_quarantine"
#: How the reason for a batch file without records begins.
EMPTY_REASON = "empty"


@dataclass(frozen=True)
class Quarantined:
    """A batch file set aside: where it was, where it went, and why."""

    batch: str
    source: str
    moved_to: str
    reason: str


@dataclass(frozen=True)
class BatchStats:
    """What one batch file held, for the processed-batches log."""

    batch: str
    records: int
    table: str | None
    shard: str | None = None
    read_ts: str | None = None
    read_method: str | None = None
    max_commit: str | None = None
    #: A change-stream batch's watermark (its records' ``stream_watermark``).
    stream_mark: str | None = None


def list_new_batches(fs: FileStore, processed: set[str]) -> list[FileEntry]:
    """Batch files under the staging folder that are not in ``processed`` (by batch name)."""
    return fs.glob(BATCH_GLOB, keep=lambda uri: batch_name(uri) not in processed)


def read_schema() -> Any:
    """The staging fields as read: the object fields (``values``, ``types``) kept as their JSON text.

    Spark keeps a JSON object read into a STRING column as its compact text, so the job
    can write a row's values as staged and parses them into maps only where it must.
    """
    return records.schema(_read_fields())


def read_schema_ddl() -> str:
    """:func:`read_schema` as DDL text (what a Python data source gives Spark without a session)."""
    return records.schema_ddl(_read_fields())


def _read_fields() -> tuple[records.Field, ...]:
    return tuple((name, "STRING" if kind.startswith("MAP<") else kind, doc) for name, kind, doc in records.STAGING_READ_FIELDS)


#: The staging fields read as text (:func:`read_schema`: the objects as their JSON text, keys and shard too).
TEXT_FIELDS = frozenset(name for name, kind, _ in _read_fields() if kind == "STRING")


#: The column Spark's JSON reader fills with a line it could not parse (its PERMISSIVE mode).
CORRUPT_COLUMN = "_corrupt_line"
#: Settings the frame of :func:`read_batches` is to be computed with (the job's runs set them).
#: Spark's JSON reader would keep an object read into a STRING column as the line spells it;
#: the job keeps the text Spark writes for it (compact, its own escapes and numbers), as it
#: always has, so that values staged by any writer compare equal across runs (old values).
READ_SETTINGS = {"spark.sql.json.enableExactStringParsing": "false"}


def read_batches(spark: Any, files: list[FileEntry], *, local: bool = False) -> Any:
    """The records of ``files`` as a DataFrame: the staging fields plus ``batch`` and ``_bad``.

    ``values`` and ``types`` are JSON object texts (:func:`read_schema`). ``local``: the files
    are on the driver's disk, where Spark's parallel listing (a Spark job with a task per file,
    past 32 files) costs more than looking at them in turn.

    Spark's JSON reader parses the lines' bytes as they are (a line that is not UTF-8 is a bad
    line, where ``from_json`` over text lines would have replaced the bytes), in a fifth less
    time than ``from_json`` over text lines, which builds a character reader per line. It skips
    lines holding nothing but blanks: the writer never writes one, and the ``seq`` check still
    finds a record lost or repeated. Compute the frame with :data:`READ_SETTINGS`.
    """
    threshold = {"spark.sql.sources.parallelPartitionDiscovery.threshold": str(max(32, len(files) + 1))}
    schema = f"{read_schema_ddl()}, {CORRUPT_COLUMN} STRING"
    if not files:  # Spark's reader given no path would not read nothing (a run whose every batch was bad)
        parsed = spark.createDataFrame([], schema)
    else:
        with temporary_conf(spark, threshold if local else {}):
            parsed = (spark.read.schema(schema).option("mode", "PERMISSIVE")
                      .option("columnNameOfCorruptRecord", CORRUPT_COLUMN).json([f.uri for f in files]))
    # SQL text: a few calls into the JVM instead of several per Column operation (sql_steps).
    fields = [f"`{name}`" for name, _, _ in _read_fields()]
    return parsed.selectExpr(*fields, f"regexp_extract(input_file_name(), {sql_literal(BATCH_NAME_PATTERN)}, 1) AS batch",
                             f"{bad_record_sql()} AS _bad")


def bad_record_sql(corrupt: str = CORRUPT_COLUMN) -> str:
    """SQL: the staging record read (its fields as columns; ``corrupt`` set when its line was not
    a JSON object Spark could parse) is not valid.

    Example:
        >>> bad_record_sql().startswith("_corrupt_line IS NOT NULL OR `v` IS NULL")
        True
    """
    def any_null(names: tuple[str, ...]) -> str:
        return " OR ".join(f"`{name}` IS NULL" for name in names)

    def among(column: str, values: tuple[str, ...]) -> str:
        return f"{column} IN ({', '.join(sql_literal(v) for v in values)})"

    return " OR ".join((
        f"{corrupt} IS NOT NULL OR {any_null(REQUIRED_FIELDS)}",
        # A change-stream record without its identity could not be told from a repeat of it.
        f"(coalesce(v >= {STREAM_FORMAT}, FALSE) AND ({any_null(STREAM_REQUIRED_FIELDS)}))",
        f"v > {READ_FORMAT}",
        "NOT coalesce(startswith(`values`, '{') AND startswith(`types`, '{'), FALSE)",
        f"NOT coalesce({among('upper(mod_type)', INPUT_MOD_TYPES)}, mod_type IS NULL)",
        f"NOT coalesce({among('value_capture_type', VALUE_CAPTURE_TYPES)}, value_capture_type IS NULL)",
        f"NOT coalesce(commit_timestamp RLIKE {sql_literal(TIMESTAMP_PATTERN)}, FALSE)"))


def check_batches(batches: Mapping[str, Mapping[str, Any]],
                  files: list[FileEntry]) -> tuple[list[BatchStats], dict[str, str]]:
    """Per-file stats of the good files, and the bad files with their reasons.

    ``batches`` maps a batch name to what its records held (:func:`..engines.tally.merge_batch`).
    """
    stats: list[BatchStats] = []
    bad: dict[str, str] = {}
    for entry in files:
        name = batch_name(entry.uri)
        row = batches.get(name)
        reason = _bad_reason(entry, row)
        if reason or row is None:
            bad[name] = reason or "no records"
        else:
            stats.append(BatchStats(name, int(row["n"]), row["table"], row["shard"], row["read_ts"], row["read_method"],
                                    row["max_commit"], row.get("stream_mark")))
    return stats, bad


def _bad_reason(entry: FileEntry, row: Mapping[str, Any] | None) -> str | None:
    if row is None:
        return f"{EMPTY_REASON} file ({entry.length} bytes, no records): truncated or never written"
    if row["max_v"] is not None and row["max_v"] > READ_FORMAT:
        return f"written by a newer staging format (v={row['max_v']}, this job reads v<={READ_FORMAT})"
    if row["bad"]:
        return (f"{row['bad']} of {row['n']} lines are not valid staging records "
                "(corrupt or truncated JSON, or missing fields)")
    if not seq_ok(row):
        return (f"records seq {row['min_seq']}..{row['max_seq']} do not match its {row['n']} lines "
                "(lines lost or repeated)")
    if len(row["tables"]) > 1:
        return f"records of several tables ({', '.join(row['tables'])}); a batch holds one table's changes"
    return None


def quarantine(staging: FileStore, warehouse: FileStore, files: list[FileEntry], bad: dict[str, str],
               now: dt.datetime) -> list[Quarantined]:
    """Move the bad files into ``<warehouse>/_quarantine`` with a report each."""
    moved = []
    for entry in files:
        name = batch_name(entry.uri)
        if name not in bad:
            continue
        target = f"{QUARANTINE_DIR}/{name}"
        if warehouse.exists(target):  # the same name quarantined before: keep both
            target = f"{target}.{int(now.timestamp() * 1000)}"
        new_uri = warehouse.move(entry.uri, target)
        report = {"v": 1, "batch": name, "source": entry.uri, "moved_to": new_uri, "reason": bad[name],
                  "bytes": entry.length, "quarantined_at": now.isoformat()}
        warehouse.write_text(f"{target}.report.json", json.dumps(report, indent=2) + "\n", overwrite=True)
        moved.append(Quarantined(name, entry.uri, new_uri, bad[name]))
    return moved
