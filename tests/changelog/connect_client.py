"""A Spark Connect client process: the builder API and the views through a Connect session.

``python -m tests.changelog.connect_client sc://HOST:PORT STAGING WAREHOUSE`` runs
``Changelog(spark)...run()`` on a Connect session, registers the views and prints, as one JSON
object, the run's summary and the rows of the ``changelog``, ``current_state`` and
``watermarks`` views. It is a process of its own because a Connect client switches pyspark
into Connect mode for the whole process (the test process keeps its classic session).
"""

from __future__ import annotations

import json
import sys

from watcher.changelog import Changelog, register_views
from watcher.changelog.spark.connect import is_connect
from watcher.changelog.spark.jvm import registry
from watcher.changelog.spark.session import connect_session

#: The columns of each view the test compares with local mode.
VIEW_COLUMNS = {
    "changelog": ["change_id", "table_name", "keys", "mod_type", "new_values", "old_values", "commit_timestamp",
                  "transaction_group", "record_sequence", "number_of_records_in_group"],
    "current_state": ["table_name", "keys", "new_values", "commit_timestamp", "change_id"],
    "watermarks": ["table_name", "watermark", "loops", "complete_from"],
}


def view_rows(spark: object, view: str) -> list[list[object]]:
    """The rows of ``view`` (its VIEW_COLUMNS), sorted, as JSON-friendly lists."""
    frame = spark.table(view).select(*VIEW_COLUMNS[view])  # type: ignore[attr-defined]
    return sorted([None if v is None else v for v in row] for row in frame.collect())


def main(argv: list[str]) -> int:
    url, staging, warehouse = argv
    spark = connect_session(url, "spanner-watcher connect test")
    assert is_connect(spark), type(spark)
    result = Changelog(spark).staging(staging).warehouse(warehouse).engine("spark").run()  # Spark through Connect
    register_views(spark, warehouse)
    out = {"result": {"version": result.version, "changes_written": result.changes_written,
                      "committed": result.committed, "old_values_by": result.old_values_by},
           "views": {view: view_rows(spark, view) for view in VIEW_COLUMNS},
           "jvm_function": spark.catalog.functionExists(registry.OLD_VALUES)}
    print(json.dumps(out, default=str))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
