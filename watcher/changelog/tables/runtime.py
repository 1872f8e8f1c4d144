"""Delta Lake on Spark: the jars and the session settings that load them.

Delta's Spark side is a jar per Spark release (``io.delta:delta-spark_<spark>_2.13``). A session
gets it through Spark's own package mechanism (``spark.jars.packages``: Ivy resolves it from
Maven Central into its cache once, later starts read the cache), with Delta's SQL extension and
catalog, so ``format("delta")``, ``MERGE INTO`` and ``delta.`path``` work. What a session sets is
:func:`spark_settings`; a Spark Connect server and ``spark-submit`` take the same settings as
command-line arguments (:func:`submit_arguments`), since a running JVM cannot load an extension.

Example:
    >>> DELTA_PACKAGE.startswith("io.delta:delta-spark_4.2_2.13:")
    True
    >>> spark_settings({})["spark.sql.extensions"]
    'io.delta.sql.DeltaSparkSessionExtension'
    >>> spark_settings({"spark.jars.packages": "org.example:x:1"})["spark.jars.packages"].split(",")[0]
    'org.example:x:1'
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

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
    if not any(p.strip().startswith("io.delta:delta-spark") for p in out.get("spark.jars.packages", "").split(",")):
        out["spark.jars.packages"] = _joined(out.get("spark.jars.packages"), DELTA_PACKAGE)
    out["spark.sql.extensions"] = _joined(out.get("spark.sql.extensions"), EXTENSION)
    out.setdefault("spark.sql.catalog.spark_catalog", CATALOG)
    return out


def submit_arguments(conf: Mapping[str, str] | None = None) -> list[str]:
    """``spark-submit`` (or a Connect server's ``start-connect-server``) arguments that load Delta.

    >>> submit_arguments()[:2]
    ['--packages', 'io.delta:delta-spark_4.2_2.13:4.4.0']
    """
    settings = spark_settings(conf or {})
    args = ["--packages", settings.pop("spark.jars.packages")]
    for key, value in settings.items():
        args += ["--conf", f"{key}={value}"]
    return args


def resolved_jar() -> Path:
    """Where Spark's package mechanism keeps Delta's jar once resolved (its default Ivy folder)."""
    group, artifact, version = DELTA_PACKAGE.split(":")
    return Path.home() / ".ivy2.5.2" / "jars" / f"{group}_{artifact}-{version}.jar"


def main() -> int:
    """Resolve Delta's jars into Spark's package cache (``./run.sh setup`` runs this; at once when resolved)."""
    from ..session import get_session

    if resolved_jar().is_file():
        return 0
    try:
        spark = get_session("local[1]", app="spanner-watcher-setup")
        spark.range(1).collect()
        spark.stop()
    except Exception as exc:  # noqa: BLE001 - setup reports and goes on; the first job says the same
        print(f"Delta Lake's jars ({DELTA_PACKAGE}) could not be resolved: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
