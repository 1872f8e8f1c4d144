"""The warehouse's tables as engines other than Spark read them: delta-rs and DuckDB.

Any Delta reader sees exactly the committed rows; these are the two a Python user reaches for
without Spark. DuckDB reads Delta through its ``delta`` extension, loaded here from the
``duckdb-extension-delta`` package so that nothing is downloaded when a query runs.

Example:
    >>> con = duckdb_connection()                                   # doctest: +SKIP
    >>> con.sql("SELECT mod_type, count(*) FROM delta_scan('/data/warehouse/changelog') GROUP BY 1")   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ...errors import ChangelogError


def duckdb_extension_path() -> Path:
    """The ``delta`` extension of the installed DuckDB, from the duckdb-extension-delta package."""
    import duckdb

    try:
        import duckdb_extension_delta
    except ImportError as exc:
        raise ChangelogError("DuckDB reads Delta tables with its delta extension: pip install "
                             f"duckdb-extension-delta=={duckdb.__version__}") from exc
    path = Path(duckdb_extension_delta.__file__).parent / "extensions" / f"v{duckdb.__version__}" / "delta.duckdb_extension"
    if not path.is_file():
        raise ChangelogError(f"duckdb-extension-delta has no extension for DuckDB {duckdb.__version__} ({path} is missing): "
                             f"pip install duckdb-extension-delta=={duckdb.__version__}")
    return path


def duckdb_connection() -> Any:
    """A DuckDB connection with the delta extension loaded (``delta_scan('<warehouse>/<table>')``)."""
    import duckdb

    con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
    con.execute(f"LOAD '{duckdb_extension_path()}'")
    return con


def arrow_table(table: Any, *, columns: list[str] | None = None, filters: Any = None) -> Any:
    """A delta-rs table's rows as one Arrow table; on local disk read through pyarrow's own filesystem.

    delta-rs otherwise reads through a filesystem written in Python, whose last reference an Arrow
    thread may drop while the interpreter exits: the process then aborts (``std::terminate``) after
    its work is done.

    >>> import tempfile, pyarrow as pa
    >>> from deltalake import DeltaTable, write_deltalake
    >>> folder = tempfile.mkdtemp()
    >>> write_deltalake(folder, pa.table({"table_name": ["a b/c", "d"], "n": [1, 2]}), partition_by=["table_name"])
    >>> sorted(arrow_table(DeltaTable(folder), columns=["n"]).column("n").to_pylist())
    [1, 2]
    """
    import pyarrow.fs as pafs

    from ...storage_urls import local_path

    folder = local_path(table.table_uri)
    native = pafs.SubTreeFileSystem(folder.rstrip("/") or "/", pafs.LocalFileSystem()) if folder else None
    return table.to_pyarrow_table(columns=columns, filters=filters, filesystem=native)


def rows_holding(table: Any, column: str, values: Iterable[str], *, partitions: Mapping[str, Iterable[str]],
                 columns: list[str]) -> Any:
    """``columns`` of the rows of a delta-rs table in ``partitions`` (column -> values) whose text
    ``column`` is one of ``values``, as one Arrow table.

    Only the files whose statistics in the Delta log leave room for one of ``values`` are read (a
    file's least and greatest value of the column; Delta truncates them so that they still bound
    it), as Delta readers skip files: a key looked up in a table of many small files, as a long
    stream leaves the current state, costs the few files whose key range holds it, where a scan
    opens every file. A table this cannot read file by file (not on local disk, a reader feature,
    no statistics of ``column``) is scanned instead, with the same rows.

    >>> import tempfile, pyarrow as pa
    >>> from deltalake import DeltaTable, write_deltalake
    >>> folder = tempfile.mkdtemp()
    >>> for keys in (["a", "b"], ["c", "d"]):
    ...     write_deltalake(folder, pa.table({"t": ["T", "T"], "k": keys, "n": [1, 2]}), partition_by=["t"], mode="append")
    >>> rows_holding(DeltaTable(folder), "k", ["d", "x"], partitions={"t": ["T"]}, columns=["t", "k", "n"]).to_pylist()
    [{'t': 'T', 'k': 'd', 'n': 2}]
    """
    import urllib.parse

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ...storage_urls import local_path

    wanted = sorted(set(values))
    allowed = {name: set(among) for name, among in partitions.items()}
    folder = local_path(table.table_uri)
    actions = pa.table(table.get_add_actions(flatten=True)) if folder and table.protocol().min_reader_version == 1 else None
    bounds = (f"min.{column}", f"max.{column}")
    paths = actions.column("path").to_pylist() if actions is not None else []
    # A file named by an absolute URL (a shallow clone's) is left to delta-rs' scan.
    if actions is None or any(":" in path or path.startswith("/") for path in paths) or not all(
            name in actions.column_names for name in (*bounds, *(f"partition.{p}" for p in allowed))):
        read = arrow_table(table, columns=columns, filters=[(p, "in", sorted(v)) for p, v in allowed.items()] or None)
        return read.filter(pc.is_in(read.column(column), value_set=pa.array(wanted, pa.string())))
    schema = pa.schema(table.schema().to_arrow())
    out = pa.schema([schema.field(name) for name in columns])
    stored = [name for name in columns if f"partition.{name}" not in actions.column_names]
    if column not in stored:
        stored.append(column)
    lows, highs = (actions.column(name).to_pylist() for name in bounds)
    parts = {name.removeprefix("partition."): actions.column(name).to_pylist()
             for name in actions.column_names if name.startswith("partition.")}
    pieces = []
    for i, path in enumerate(paths):
        if any(parts[name][i] not in among for name, among in allowed.items()):
            continue
        low, high = lows[i], highs[i]
        if low is not None and high is not None and not _holds_one(wanted, low, high):
            continue
        # As the table's schema has the columns (a writer may have stored a text as a string view).
        read = pq.read_table(f"{folder.rstrip('/')}/{urllib.parse.unquote(path)}", columns=stored).cast(
            pa.schema([schema.field(name) for name in stored]))
        read = read.filter(pc.is_in(read.column(column), value_set=pa.array(wanted, schema.field(column).type)))
        if read.num_rows:
            pieces.append(pa.Table.from_arrays(
                [read.column(name) if name in stored else
                 pa.array([parts[name][i]] * read.num_rows, pa.string()).cast(out.field(name).type) for name in columns],
                schema=out))
    return pa.concat_tables(pieces) if pieces else out.empty_table()


def _holds_one(wanted: list[str], low: str, high: str) -> bool:
    """Whether the sorted ``wanted`` has a value from ``low`` to ``high``.

    >>> _holds_one(["b", "f"], "c", "e"), _holds_one(["b", "f"], "c", "f")
    (False, True)
    """
    import bisect

    at = bisect.bisect_left(wanted, low)
    return at < len(wanted) and wanted[at] <= high


def delta_rs_rows(uri: str, *, version: int | None = None, storage_options: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The rows of the Delta table at ``uri`` (its ``version``, else the newest) as delta-rs reads them."""
    from deltalake import DeltaTable

    return arrow_table(DeltaTable(uri, version=version, storage_options=storage_options)).to_pylist()
