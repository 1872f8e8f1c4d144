"""Delta Lake on Spark: the jars and the session settings that load them.

Delta's Spark side is a jar per Spark release (``io.delta:delta-spark_<spark>_2.13``). Spark's own
package mechanism resolves it and its dependencies from Maven Central once (``spark.jars.packages``,
run by ``./run.sh setup``), and the resolved jars' paths are kept in the cache folder, so later
sessions take them as ``spark.jars`` without resolving again (a cluster's executors get them from
the driver); a session finds Delta's SQL extension and catalog loaded, so ``format("delta")``,
``MERGE INTO`` and ``delta.`path``` work. Without the kept list a session resolves the package itself. What a session sets is
:func:`spark_settings`; a Spark Connect server and ``spark-submit`` take the same settings as
command-line arguments (:func:`submit_arguments`), since a running JVM cannot load an extension.

Example:
    >>> DELTA_PACKAGE.startswith("io.delta:delta-spark_4.2_2.13:")
    True
    >>> spark_settings({})["spark.sql.extensions"]
    'io.delta.sql.DeltaSparkSessionExtension'
    >>> spark_settings({"spark.jars.packages": "io.delta:delta-spark_4.2_2.13:4.4.0"})["spark.jars.packages"]
    'io.delta:delta-spark_4.2_2.13:4.4.0'
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlparse

#: The Spark minor release the project runs (pyproject pins pyspark to it) and the Delta release built for it.
SPARK_RELEASE = "4.2"
DELTA_RELEASE = "4.4.0"
DELTA_PACKAGE = f"io.delta:delta-spark_{SPARK_RELEASE}_2.13:{DELTA_RELEASE}"
EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"

#: Settings a single-machine session takes unless the user names them: Delta rebuilds a table's
#: state from its log in this many tasks (50 by default, far more than one machine's cores).
LOCAL_DELTA_SETTINGS = {"spark.databricks.delta.snapshotPartitions": "2"}


def _joined(current: str | None, item: str) -> str:
    """``item`` added to a comma-separated Spark list setting unless it is there."""
    items = [part.strip() for part in (current or "").split(",") if part.strip()]
    return ",".join(items if item in items else [*items, item])


def spark_settings(conf: Mapping[str, str]) -> dict[str, str]:
    """The settings that load Delta, merged into ``conf`` (a user's packages and extensions are kept).

    >>> s = spark_settings({"spark.sql.extensions": "a.B", "spark.sql.catalog.spark_catalog": "my.Catalog"})
    >>> s["spark.sql.extensions"], s["spark.sql.catalog.spark_catalog"]
    ('a.B,io.delta.sql.DeltaSparkSessionExtension', 'my.Catalog')
    """
    out = dict(conf)
    named = any(p.strip().startswith("io.delta:delta-spark") for p in out.get("spark.jars.packages", "").split(",")) \
        or "delta-spark_" in out.get("spark.jars", "")
    jars = None if named else resolved_jars()
    if jars:
        out["spark.jars"] = ",".join([*filter(None, out.get("spark.jars", "").split(",")), *jars])
    elif not named:
        out["spark.jars.packages"] = _joined(out.get("spark.jars.packages"), DELTA_PACKAGE)
    out["spark.sql.extensions"] = _joined(out.get("spark.sql.extensions"), EXTENSION)
    out.setdefault("spark.sql.catalog.spark_catalog", CATALOG)
    return out


def submit_arguments(conf: Mapping[str, str] | None = None) -> list[str]:
    """``spark-submit`` (or a Connect server's ``start-connect-server``) arguments that load Delta.

    >>> submit_arguments({"spark.jars.packages": DELTA_PACKAGE})[:2]
    ['--packages', 'io.delta:delta-spark_4.2_2.13:4.4.0']
    """
    settings = spark_settings(conf or {})
    args = ["--jars", settings.pop("spark.jars")] if "spark.jars" in settings else \
        ["--packages", settings.pop("spark.jars.packages")]
    for key, value in settings.items():
        args += ["--conf", f"{key}={value}"]
    return args


def jars_file() -> Path:
    """Where the paths of the resolved jars are kept (one per Delta and Spark release)."""
    from ..spark.jvm.jar import cache_dir

    return cache_dir() / f"delta-{DELTA_RELEASE}-spark-{SPARK_RELEASE}.jars"


def resolved_jars() -> list[str] | None:
    """The kept jar paths, or None when there are none or one of the files is gone."""
    try:
        paths = [p for p in jars_file().read_text(encoding="utf-8").split(",") if p]
    except OSError:
        return None
    return paths if paths and all(os.path.isfile(p) for p in paths) else None


def main() -> int:
    """Resolve Delta's jars with Spark's package mechanism and keep their paths (``./run.sh setup``; at once
    when they are kept)."""
    from ..spark.session import get_session

    if resolved_jars():
        return 0
    try:
        spark = get_session("local[1]", app="spanner-watcher-setup", conf={"spark.jars.packages": DELTA_PACKAGE})
        jars = [urlparse(uri).path or uri for uri in spark.sparkContext.getConf().get("spark.jars", "").split(",") if uri]
        spark.stop()
    except Exception as exc:  # noqa: BLE001 - setup reports and goes on; a session resolves the package itself
        print(f"Delta Lake's jars ({DELTA_PACKAGE}) could not be resolved: {exc}", file=sys.stderr)
        return 1
    if not any("delta-spark_" in path for path in jars):
        print(f"Spark resolved no jar of {DELTA_PACKAGE} (spark.jars: {jars})", file=sys.stderr)
        return 1
    target = jars_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    partial.write_text(",".join(jars), encoding="utf-8")
    os.replace(partial, target)  # whole or not at all
    return 0


if __name__ == "__main__":
    sys.exit(main())
