"""The ``watermarks`` view's rows: every text as the table and the markers hold it, typed as documented;
and the views of a warehouse two databases share, each of one source or both."""

from __future__ import annotations

import json

import pytest

from tests.changelog.support import SINGERS_TYPES, Stager, singer
from watcher.changelog import Changelog
from watcher.changelog.tables.source import Source
from watcher.changelog.views import WATERMARK_SCHEMA, register_views, watermarks_frame

SOURCE = {"source_project": "p", "source_instance": "i", "source_database": "d"}


def test_watermark_rows_keep_every_text_and_type(spark):
    odd = "Ünï'\"\\code\n"  # quotes, a backslash, a line break, non-ASCII: nothing needs escaping by the caller
    rows = [{**SOURCE, "table_name": "T", "watermark": "2024-05-01T00:00:00.000001999Z", "loops": 2,
             "complete_from": "2024-01-01T00:00:00.000000001Z"},
            {**SOURCE, "table_name": odd, "watermark": None, "loops": 0, "complete_from": None},
            {**dict.fromkeys(SOURCE), "table_name": "OnlyMarked", "watermark": None, "loops": 0,
             "complete_from": "2024-05-02T00:00:00.000000000Z"}]
    frame = watermarks_frame(spark, rows)
    assert frame.schema.simpleString() == spark.createDataFrame([], WATERMARK_SCHEMA).schema.simpleString()
    got = [tuple(r) for r in frame.selectExpr(
        "table_name", "watermark", "date_format(watermark_ts, 'yyyy-MM-dd HH:mm:ss.SSSSSS')", "loops",
        "complete_from", "source_database").orderBy("table_name").collect()]
    assert got == [
        ("OnlyMarked", None, None, 0, "2024-05-02T00:00:00.000000000Z", None),
        ("T", "2024-05-01T00:00:00.000001999Z", "2024-05-01 00:00:00.000001", 2, "2024-01-01T00:00:00.000000001Z", "d"),
        (odd, None, None, 0, None, "d"),
    ]


def test_no_tables_give_no_rows_with_the_same_columns(spark):
    frame = watermarks_frame(spark, [])
    assert frame.collect() == []
    assert frame.schema.simpleString() == spark.createDataFrame([], WATERMARK_SCHEMA).schema.simpleString()


@pytest.mark.usefixtures("each_engine")
def test_two_databases_with_same_named_tables_share_a_warehouse(spark, tmp_path):
    """The same table and keys from two databases: neither's rows meet the other's (state, groups,
    watermarks); the views show both, or one source's."""
    warehouse = str(tmp_path / "warehouse")
    first, second = Source("p", "i", "one"), Source("p", "i", "two")
    for n, (source, name) in enumerate(((first, "from one"), (second, "from two"))):
        stager = Stager(tmp_path / f"staging{n}")
        stager.stage("Singers", [singer(1, name), singer(2, name)], types=SINGERS_TYPES, key_columns=["SingerId"],
                     commits=[10, 20])
        result = Changelog(spark).staging(str(tmp_path / f"staging{n}")).warehouse(warehouse) \
            .source(*source.values()).views(False).run()
        assert result.mod_types == {"UPSERT": 2}  # the other database's keys are not this one's state
    register_views(spark, warehouse)
    rows = spark.sql("SELECT source_database, keys, vals['Name'] AS name FROM current_state").collect()
    assert sorted((r.source_database, json.loads(r["keys"])["SingerId"], r.name) for r in rows) == [
        ("one", "1", "from one"), ("one", "2", "from one"), ("two", "1", "from two"), ("two", "2", "from two")]
    groups = spark.sql("SELECT source_database, record_sequence, number_of_records_in_group FROM changelog").collect()
    assert {(r.source_database, r.record_sequence, r.number_of_records_in_group) for r in groups} == \
        {("one", 0, 1), ("two", 0, 1)}  # one commit timestamp per change in each database: groups of one
    assert spark.sql("SELECT count(*) FROM watermarks").first()[0] == 2
    shown = register_views(spark, warehouse, source=second)
    assert shown.version == 2 and sorted(shown.tables) == ["Singers"]
    assert {r.name for r in spark.sql("SELECT vals['Name'] AS name FROM current_state").collect()} == {"from two"}
    assert spark.sql("SELECT count(*) FROM changelog").first()[0] == 2
