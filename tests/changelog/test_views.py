"""The ``watermarks`` view's rows: every text as the manifest and the markers hold it, typed as documented."""

from __future__ import annotations

from watcher.changelog.manifest import Manifest
from watcher.changelog.views import WATERMARK_SCHEMA, watermarks_frame


def test_watermark_rows_keep_every_text_and_type(spark):
    odd = "Ünï'\"\\code\n"  # quotes, a backslash, a line break, non-ASCII: nothing needs escaping by the caller
    committed = Manifest(version=3, tables={
        "T": {"watermark": "2024-05-01T00:00:00.000001999Z", "loops": {"a": {}, "b": {}}},
        odd: {},  # a table with no watermark yet
    })
    markers = {"OnlyMarked": "2024-05-02T00:00:00.000000000Z", "T": "2024-01-01T00:00:00.000000001Z"}
    frame = watermarks_frame(spark, committed, markers)
    assert frame.schema.simpleString() == spark.createDataFrame([], WATERMARK_SCHEMA).schema.simpleString()
    rows = [tuple(r) for r in frame.selectExpr(
        "table_name", "watermark", "date_format(watermark_ts, 'yyyy-MM-dd HH:mm:ss.SSSSSS')", "loops",
        "complete_from").orderBy("table_name").collect()]
    assert rows == [
        ("OnlyMarked", None, None, 0, "2024-05-02T00:00:00.000000000Z"),
        ("T", "2024-05-01T00:00:00.000001999Z", "2024-05-01 00:00:00.000001", 2, "2024-01-01T00:00:00.000000001Z"),
        (odd, None, None, 0, None),
    ]


def test_no_tables_give_no_rows_with_the_same_columns(spark):
    frame = watermarks_frame(spark, Manifest(version=0), {})
    assert frame.collect() == []
    assert frame.schema.simpleString() == spark.createDataFrame([], WATERMARK_SCHEMA).schema.simpleString()


def test_columns_null_in_every_row_keep_their_types(spark):
    frame = watermarks_frame(spark, Manifest(version=1, tables={"T": {}}), {})
    assert frame.schema.simpleString() == spark.createDataFrame([], WATERMARK_SCHEMA).schema.simpleString()
    assert [tuple(r) for r in frame.collect()] == [("T", None, None, 0, None)]
