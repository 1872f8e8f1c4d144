"""The current-state table: the latest row per key, kept per table as a base and delta layers.

A table's state lives in run folders (Parquet): ``<warehouse>/current_state/v<N>/table_name=<T>/``
when run N wrote the table's whole state (its *base*, the manifest's ``state_version``), and
``current_state/v<N>/deltas/`` when run N wrote only the keys it changed (a *delta*, listed in
``state_deltas``); the deltas of all of a run's tables share that one folder, as they are
small (one file for a small run, instead of one per table). A key's state is its newest row over the layers (by
commit timestamp, then the later layer), so an incremental run writes rows in proportion to
the keys it touched, not to the table. A run rewrites a table whole (a new base, the layers merged)
when it has no state yet, when its deltas are many (:data:`MAX_DELTAS`) or hold as many rows
as the base, or when the run's input is too large to filter the state by key
(:data:`DELTA_INPUT_BYTES`). A crashed run leaves the committed layers untouched.

Deleted keys stay, flagged ``is_deleted``: the job needs them to tell a key that comes back
(INSERT) from one never seen (the ``current_state`` view shows live rows only).

Example:
    >>> version_dir(7)
    'current_state/v000000000007'
    >>> layers({"state_version": 3, "state_deltas": [5, 6]})
    [3, 5, 6]
    >>> rewrite_whole({"state_version": 3, "state_rows": 100, "state_deltas": [5], "delta_rows": [10]}, 1_000)
    False
    >>> layer_rows({"state_version": 3, "state_rows": 100, "state_deltas": [5, 6], "delta_rows": [10, 0]})
    [(3, 100), (5, 10), (6, 0)]
    >>> layer_rows({"state_version": 3, "state_deltas": [5]})  # a manifest without counts
    [(3, None), (5, None)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from . import records
from .files import FileStore
from .fs import NO_CHECKSUMS
from .manifest import Manifest
from .sql_steps import in_list

STATE_DIR = "current_state"
#: Deltas a table may have before a run merges its layers into a new base.
MAX_DELTAS = 8
#: The same when a compactor merges the layers apart from the runs: a run merges them itself only
#: past this many (the compactor fell behind or failed).
MAX_DELTAS_APART = 4 * MAX_DELTAS
#: Above this much new staged input (bytes), a run reads its tables' state whole instead of
#: filtering it by the new keys (the filter sends the new keys to every task).
DELTA_INPUT_BYTES = 256 * 1024 * 1024
#: Up to this many state rows, a run reads a delta table's state whole and drops the keys without
#: new rows right after its shuffle; above it, the new keys are sent to every task of the state
#: scan instead (a separate small Spark job, but the state is never shuffled).
SHUFFLE_FILTER_ROWS = 2_000_000
#: The layer a state row came from, while layers are merged: its run folder's version as twelve
#: digits of text (see :func:`layer_sql`).
LAYER = "_layer"
#: What a run that writes a delta needs of a key's state: its values and their types (a later partial
#: row is filled from both), time (and version) and deletion (the other columns describe the state row
#: itself, and a delta never rewrites a state row).
DELTA_COLUMNS = ("table_name", "keys", "new_values", "column_types", "commit_timestamp", "is_deleted", "version_seq")


#: Digits of a run version in folder names.
_VERSION_DIGITS = 12


def version_dir(version: int) -> str:
    return f"{STATE_DIR}/v{version:0{_VERSION_DIGITS}d}"


def deltas_dir(version: int) -> str:
    """The folder of the delta rows a run wrote (all its delta tables).

    Example:
        >>> deltas_dir(7)
        'current_state/v000000000007/deltas'
    """
    return f"{version_dir(version)}/deltas"


def layers(info: Mapping[str, Any]) -> list[int]:
    """A table's state layers, oldest first: its base, then its deltas."""
    base = info.get("state_version")
    return ([int(base)] if base else []) + [int(v) for v in info.get("state_deltas", [])]


def layer_rows(info: Mapping[str, Any]) -> list[tuple[int, int | None]]:
    """A table's layers with the rows each holds (None when the manifest does not say)."""
    versions = layers(info)
    counts = ([info.get("state_rows")] if info.get("state_version") else []) + list(info.get("delta_rows", []))
    if len(counts) != len(versions):  # an older manifest, without counts for every layer
        counts = [None] * len(versions)
    return [(v, None if n is None else int(n)) for v, n in zip(versions, counts, strict=True)]


def rewrite_whole(info: Mapping[str, Any], input_bytes: int, *, compacted_apart: bool = False) -> bool:
    """Whether a run should write the table's whole state (a new base) rather than a delta.

    ``compacted_apart``: a compactor merges the layers outside the runs (:mod:`.compaction`), so a
    run rewrites the table only when it has no base, its input is too large to filter the state by
    key, or the deltas have piled up past :data:`MAX_DELTAS_APART` (the compactor is not keeping up).

    Example:
        >>> many = {"state_version": 3, "state_rows": 10, "state_deltas": list(range(4, 4 + MAX_DELTAS)),
        ...         "delta_rows": [1] * MAX_DELTAS}
        >>> rewrite_whole(many, 1_000), rewrite_whole(many, 1_000, compacted_apart=True)
        (True, False)
    """
    if not info.get("state_version") or input_bytes > DELTA_INPUT_BYTES:
        return True
    deltas = info.get("state_deltas", [])
    if compacted_apart:
        return len(deltas) >= MAX_DELTAS_APART
    return len(deltas) >= MAX_DELTAS or sum(info.get("delta_rows", [])) >= max(1, info.get("state_rows", 0))


def size(info: Mapping[str, Any]) -> int:
    """An upper bound of a table's state rows over its layers."""
    return int(info.get("state_rows", 0)) + sum(int(n) for n in info.get("delta_rows", []))


def after_run(info: Mapping[str, Any], version: int, *, whole: bool, rows: int) -> dict[str, Any]:
    """The table's manifest entry after a run wrote ``rows`` state rows as a base (``whole``) or a delta."""
    updated = dict(info)
    if whole:
        updated.update(state_version=version, state_rows=rows, state_deltas=[], delta_rows=[])
    else:
        updated["state_deltas"] = [*info.get("state_deltas", []), version]
        updated["delta_rows"] = [*info.get("delta_rows", []), rows]
    return updated


def load_layers(spark: Any, fs: FileStore, manifest: Manifest, tables: Iterable[str] | None = None, *,
                slim: Iterable[str] = ()) -> Any:
    """The committed state rows of ``tables`` (all when None) in every layer, with their ``_layer``.

    A key may have a row in several layers; :func:`latest` keeps its newest. Of the ``slim``
    tables only the :data:`DELTA_COLUMNS` are read (the other columns are null).
    """
    wanted = set(manifest.tables) if tables is None else set(tables) & set(manifest.tables)
    slim = set(slim)
    bases: dict[tuple[int, bool], list[str]] = {}
    deltas: dict[tuple[int, bool], list[str]] = {}
    for table in sorted(wanted):
        info = manifest.tables[table]
        for n, (version, rows) in enumerate(layer_rows(info)):
            is_base = n == 0 and bool(info.get("state_version"))
            folder = f"{version_dir(version)}/table_name={table}" if is_base else deltas_dir(version)
            # A layer the manifest counts rows in has its folder; others (none counted, or an
            # older manifest without counts) are looked for.
            if (rows or 0) > 0 or (rows is None and fs.exists(folder)):
                (bases if is_base else deltas).setdefault((version, table in slim), []).append(table)
    schema = records.schema_ddl(records.STATE_FIELDS)  # text: one call to give it to a reader

    def columns(slim_layer: bool, layer: str) -> list[str]:  # SQL text: few calls into the JVM (sql_steps)
        return [f"`{name}`" if not slim_layer or name in DELTA_COLUMNS else f"CAST(NULL AS {kind}) AS `{name}`"
                for name, kind, _ in records.STATE_FIELDS] + [f"{layer} AS {LAYER}"]

    frames = []
    for (version, slim_layer), names in sorted(bases.items()):
        base = fs.uri(version_dir(version))
        frame = spark.read.schema(schema).option("basePath", base).parquet(*[f"{base}/table_name={t}" for t in names])
        frames.append(frame.selectExpr(*columns(slim_layer, layer_sql(version))))
    for slim_layer, scans in _delta_scans(deltas, {t: int(manifest.tables[t].get("state_version") or 0) for t in wanted}):
        for versions, names in scans:
            frame = spark.read.schema(schema).parquet(*[fs.uri(deltas_dir(v)) for v in versions])
            layer = layer_sql(versions[0]) if len(versions) == 1 else DELTA_LAYER_SQL
            frames.append(frame.where(in_list("table_name", names)).selectExpr(*columns(slim_layer, layer)))
    if not frames:
        return spark.createDataFrame([], records.schema(records.STATE_FIELDS)).selectExpr("*", f"{layer_sql(0)} AS {LAYER}")
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


#: SQL: the layer of a delta row read with others in one scan, from its file's folder
#: (``.../v<N>/deltas/<file>``); only :func:`latest` asks for it, so the job's own scans skip it.
DELTA_LAYER_SQL = "regexp_extract(_metadata.file_path, '/v([0-9]{12})/deltas/[^/]*$', 1)"


def layer_sql(version: int) -> str:
    """SQL: a layer's tag. Text of twelve digits, as in its folder's name: it orders as the number
    does, and Spark keeps a text value out of the code it generates (a number would be written into
    it), so plans that differ only in their layers share their compiled code.

    Example:
        >>> layer_sql(12)
        "'000000000012'"
    """
    return f"'{version:0{_VERSION_DIGITS}d}'"


def _delta_scans(deltas: Mapping[tuple[int, bool], list[str]], bases: Mapping[str, int]
                 ) -> list[tuple[bool, list[tuple[list[int], list[str]]]]]:
    """How to read the delta layers: per kind (slim or not), the (versions, tables) of each scan.

    A table's deltas are every delta folder after its base that holds its rows, so all folders
    can be read in one scan filtered by table, unless a folder is older than a table's base: it
    may still hold that table's rows from before the base (stale), and then each folder is read
    with its own tables, as listed. One scan keeps the plan, and the code Spark generates for it,
    the same however many deltas there are, so that the next run (a streaming micro-batch) reuses
    the code compiled for this one instead of compiling and JIT-warming it again.

    Example:
        >>> _delta_scans({(5, True): ["T"], (6, True): ["T"]}, {"T": 3})
        [(True, [([5, 6], ['T'])])]
        >>> _delta_scans({(5, False): ["T"], (9, False): ["U"]}, {"T": 3, "U": 7})  # 5 is before U's base
        [(False, [([5], ['T']), ([9], ['U'])])]
    """
    out = []
    for slim_layer in sorted({slim for _, slim in deltas}):
        kind = sorted((version, names) for (version, slim), names in deltas.items() if slim == slim_layer)
        tables = sorted({t for _, names in kind for t in names})
        oldest = min(version for version, _ in kind)
        if all(bases.get(t, 0) < oldest for t in tables):
            out.append((slim_layer, [([version for version, _ in kind], tables)]))
        else:
            out.append((slim_layer, [([version], sorted(names)) for version, names in kind]))
    return out


def latest(layered: Any) -> Any:
    """Each key's newest row over the layers (by commit timestamp, then the later layer), without ``_layer``.

    ``layered`` has the columns of :func:`load_layers`, in its order. SQL text, and a drop rather
    than a select of the kept columns: the views are built again after every run, and each
    Column operation, or each name of a list, is a call into the driver's JVM (:mod:`.sql_steps`).
    """
    newest = f"row_number() OVER (PARTITION BY table_name, keys ORDER BY commit_timestamp DESC, {LAYER} DESC)"
    return layered.selectExpr("*", f"{newest} AS _rank").where("_rank = 1").drop("_rank", LAYER)


def load(spark: Any, fs: FileStore, manifest: Manifest, tables: Iterable[str] | None = None) -> Any:
    """The committed state of ``tables`` (all tables when None): one row per key."""
    wanted = set(manifest.tables) if tables is None else set(tables) & set(manifest.tables)
    layered = load_layers(spark, fs, manifest, wanted)
    if all(len(layers(manifest.tables[t])) <= 1 for t in wanted):
        return layered.drop(LAYER)  # the STATE_FIELDS, in order (load_layers)
    return latest(layered)


def write(state: Any, fs: FileStore, version: int, *, tables: Iterable[str], deltas: Iterable[str] = (),
          one_file: bool = False) -> None:
    """Write the state rows in ``state`` as layer ``version``: the whole state of ``tables``, but
    of the ``deltas`` among them only the changed keys (the rows ``state`` holds for them).

    ``one_file``: the deltas are few rows (a small run) and go into one file.
    """
    rows = records.conform(state, records.STATE_FIELDS)
    deltas = sorted(set(deltas))
    in_deltas = in_list("table_name", deltas)
    if set(tables) - set(deltas):
        (rows.where(f"NOT ({in_deltas})") if deltas else rows).write.options(**NO_CHECKSUMS).mode("overwrite").partitionBy("table_name").parquet(
            fs.uri(version_dir(version)))
    if deltas:
        delta_rows = rows.where(in_deltas)
        (delta_rows.coalesce(1) if one_file else delta_rows).write.options(**NO_CHECKSUMS).mode("overwrite").parquet(fs.uri(deltas_dir(version)))


def prune(fs: FileStore, manifest: Manifest, previous: Manifest | None = None, *,
          keep: Iterable[int] = ()) -> list[str]:
    """Delete state versions neither ``manifest`` nor ``previous`` uses; returns what was deleted.

    ``previous`` is the manifest the run started from: a reader of the views that loaded it just
    before this run committed still finds its state layers (they go one run later). ``keep``: versions
    a compactor is writing or has written and not yet handed to a run (:mod:`.compaction`).
    """
    versions = {v for m in (manifest, previous) if m is not None for t in m.tables.values() for v in layers(t)}
    used = {version_dir(v).rsplit("/", 1)[-1] for v in versions | set(keep)}
    removed = []
    for name in fs.list_names(STATE_DIR):
        if name.startswith("v") and name not in used and name[1:].isdigit() and int(name[1:]) < manifest.version:
            fs.delete(f"{STATE_DIR}/{name}")
            removed.append(name)
    return removed
