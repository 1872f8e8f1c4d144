"""The warehouse's tables as engines other than Spark read them: delta-rs and DuckDB.

Any Delta reader sees exactly the committed rows; these are the two a Python user reaches for
without Spark. DuckDB reads Delta through its ``delta`` extension, loaded here from the
``duckdb-extension-delta`` package so that nothing is downloaded when a query runs.

Example:
    >>> con = duckdb_connection()                                   # doctest: +SKIP
    >>> con.sql("SELECT mod_type, count(*) FROM delta_scan('/data/warehouse/changelog') GROUP BY 1")   # doctest: +SKIP
"""

from __future__ import annotations

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


def delta_rs_rows(uri: str, *, version: int | None = None, storage_options: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The rows of the Delta table at ``uri`` (its ``version``, else the newest) as delta-rs reads them."""
    from deltalake import DeltaTable

    return arrow_table(DeltaTable(uri, version=version, storage_options=storage_options)).to_pylist()
