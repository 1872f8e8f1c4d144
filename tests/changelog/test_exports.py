"""Exports: exact types, BigQuery order, Datastream events, and incremental exports by run, each row once.

The warehouses are Delta tables whose changelog rows are committed as the job's runs through
the ledger (:mod:`tests.changelog.export_support`), so these tests do not depend on the job. A row
arriving in a later run with an older commit timestamp is exported once; an export with nothing
new writes nothing; two databases' same-named tables are exported apart; the Spanner export goes
through the official client; an export SIGKILLed between publishing its files and recording its
progress leaves each row in exactly one increment.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import functools
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from watcher.changelog.exports import Selection, bigquery, datastream, rows
from watcher.changelog.exports.bigquery import compare_sequence_numbers, parse_sequence_number
from watcher.changelog.exports.folder_target import PROGRESS_FILE, FolderExport
from watcher.changelog.exports.spanner_target import PROGRESS_TABLE, SpannerExport
from watcher.changelog.tables import compaction
from watcher.changelog.tables.ledger import Ledger
from watcher.codec import decode_value
from watcher.errors import ChangelogError, ConfigurationError
from watcher.model import from_nanos

from .export_support import Change, commit_run, exact

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("export_child.py")
TYPES = {
    "Id": "INT64", "Name": "STRING(MAX)", "Big": "INT64", "F": "FLOAT64", "Nan": "FLOAT64", "Inf": "FLOAT64",
    "Num": "NUMERIC", "Flag": "BOOL", "Raw": "BYTES(MAX)", "Day": "DATE", "At": "TIMESTAMP", "Doc": "JSON",
    "Ints": "ARRAY<INT64>", "Strs": "ARRAY<STRING(MAX)>", "Floats": "ARRAY<FLOAT64>", "Nothing": "STRING(MAX)",
}
ROW = {
    "Id": 2**62 + 1, "Name": 'é "quoted"\n\\ tab\t', "Big": -(2**63), "F": 1e-07, "Nan": math.nan, "Inf": -math.inf,
    "Num": decimal.Decimal("-12345678901234567890123456789.123456789"), "Flag": True, "Raw": b"\x00\xff\x10bytes",
    "Day": dt.date(1, 1, 1), "At": from_nanos(1_714_557_600_123_456_789), "Doc": '{"a":[1,2.5,null],"b":"x"}',
    "Ints": [1, None, 2**63 - 1], "Strs": ["a", None, ""], "Floats": [0.1, math.inf, math.nan], "Nothing": None,
}


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b and type(a) is type(b) or (isinstance(a, dt.datetime) and a == b)


def decoded(obj: dict) -> dict:
    return {c: decode_value(TYPES[c], v) for c, v in obj.items() if c in TYPES}


def _all(spark, warehouse) -> object:
    """Every committed changelog row, in the view's columns, as the exports read them."""
    return rows.increment(spark, rows.snapshot(str(warehouse)), 0, Selection())


def _v(key: int, commit: int, value: str, **kw) -> Change:
    return Change("T", key, commit, {"V": value}, **kw)


# --- the formats, over rows read from the Delta changelog -------------------------------------------------------


def test_every_type_round_trips_into_the_view_and_each_export(spark, tmp_path):
    row = {k: v for k, v in ROW.items() if k != "Id"}
    commit_run(str(tmp_path), [Change("AllTypes", ROW["Id"], 10, row, types=TYPES, key_columns=("Id", "Name"),
                                      mod_type="INSERT")])
    changelog = _all(spark, tmp_path)
    first = changelog.collect()[0]
    new_values = json.loads(first.new_values)
    assert list(new_values) == list(TYPES)
    assert all(same(value, ROW[column]) for column, value in decoded(new_values).items())
    assert base64.b64decode(new_values["Raw"]) == ROW["Raw"]
    assert first.commit_timestamp == "2024-05-01T10:00:00.000000010Z" and first.column_types["Num"] == "NUMERIC"
    assert (first.source_project, first.source_instance, first.source_database) == ("p", "i", "d")

    bq = bigquery.bigquery_rows(changelog).collect()[0]
    row_out = json.loads(bq.row)
    assert row_out.pop("_CHANGE_TYPE") == "UPSERT" and row_out.pop("_CHANGE_SEQUENCE_NUMBER") == bq._CHANGE_SEQUENCE_NUMBER
    assert all(same(v, ROW[c]) for c, v in decoded(row_out).items()) and list(row_out) == list(TYPES)
    assert parse_sequence_number(bq._CHANGE_SEQUENCE_NUMBER) == (1_714_557_600_000_000_010, 0)

    event = json.loads(datastream.datastream_events(changelog).collect()[0].event)
    assert all(same(v, ROW[c]) for c, v in decoded(event["payload"]).items()) and list(event["payload"]) == list(TYPES)
    assert event["source_metadata"]["database"] == "projects/p/instances/i/databases/d"


@pytest.mark.parametrize("older, newer", [("77", "7B"), ("FFF/B", "FFF/ABC"), ("BA/FFFFFFFF", "ABC"), ("ABC", "FFF/ABC")])
def test_bigquery_comparison_examples(older, newer):
    assert compare_sequence_numbers(older, newer) == -1 and compare_sequence_numbers(newer, older) == 1
    assert compare_sequence_numbers(newer.lower(), newer) == 0


@pytest.mark.parametrize("text", ["", "G", "1/2/3/4/5", "12345678901234567", "1//2"])
def test_malformed_sequence_numbers_are_rejected(text):
    with pytest.raises(ChangelogError, match="_CHANGE_SEQUENCE_NUMBER"):
        parse_sequence_number(text)


def test_datastream_event_fields(spark, tmp_path):
    commit_run(str(tmp_path), [_v(1, 10, "a"), _v(1, 20, "b", mod_type="UPDATE")])
    changelog = _all(spark, tmp_path)
    first = [json.loads(r.event) for r in datastream.datastream_events(changelog, "my-stream").collect()]
    assert first == [json.loads(r.event) for r in datastream.datastream_events(changelog, "my-stream").collect()]
    events = sorted(first, key=lambda e: e["sort_keys"])
    e = events[1]
    assert list(e) == ["stream_name", "read_method", "object", "schema_key", "uuid", "read_timestamp",
                       "source_timestamp", "sort_keys", "source_metadata", "payload"]
    assert e["stream_name"] == "my-stream" and e["read_method"] == "spanner-cdc" and e["object"] == "T"
    assert e["source_timestamp"] == "2024-05-01T10:00:00.000000020Z" and e["sort_keys"] == [e["source_timestamp"], 0]
    assert e["read_timestamp"] == "2024-05-01T10:00:00.000001020Z"
    assert e["uuid"].replace("-", "") == _v(1, 20, "b").change_id()
    assert e["schema_key"] == events[0]["schema_key"] and len(e["schema_key"]) == 16
    meta = e["source_metadata"]
    assert (meta["change_type"], meta["is_deleted"], meta["primary_keys"], meta["table"]) == ("UPDATE", False, ["Id"], "T")
    assert e["payload"] == {"Id": "1", "V": "b"} and events[0]["source_metadata"]["change_type"] == "UPSERT"


def test_a_stream_name_must_be_a_name(spark, tmp_path):
    commit_run(str(tmp_path), [_v(1, 10, "a")])
    with pytest.raises(ConfigurationError, match="stream_name must be a non-empty string"):
        datastream.datastream_events(_all(spark, tmp_path), "")


# --- incremental exports into a folder ----------------------------------------------------------------------


def _lines(out: Path) -> list[dict]:
    """Every exported line of the folder's increments, with its increment folder's name."""
    return [dict(json.loads(line), _increment=f.relative_to(out).parts[0])
            for f in sorted(out.glob("increment=*/*/*/*/*/part-*")) for line in f.read_text().splitlines()]


def _ids(lines: list[dict], fmt: str) -> list[str]:
    return [line["uuid"] if fmt == "datastream" else line["_CHANGE_SEQUENCE_NUMBER"] for line in lines]


@pytest.mark.parametrize("fmt", ["bigquery", "datastream"])
def test_a_late_row_is_exported_once_and_a_repeat_writes_nothing(spark, tmp_path, fmt):
    warehouse, out = str(tmp_path / "warehouse"), tmp_path / "out"
    commit_run(warehouse, [_v(1, 100, "a"), _v(2, 200, "b"), _v(1, 300, "c")])
    first = FolderExport(spark, warehouse, str(out), fmt).run()
    assert first.written is not None and first.written.rows == {"T": 3} and first.progress.last_run == 1
    # run 2: a change of key 1 committed before the newest one exported, and a new one
    commit_run(warehouse, [_v(1, 250, "late"), _v(3, 400, "d")])
    second = FolderExport(spark, warehouse, str(out), fmt).run()
    assert (second.written.number, second.written.first_run, second.written.last_run) == (2, 2, 2)
    lines = _lines(out)
    assert len(lines) == 5 and len(set(_ids(lines, fmt))) == 5
    assert sorted(line["_increment"] for line in lines) == ["increment=000001"] * 3 + ["increment=000002"] * 2
    listing = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    # the runs' files compacted into new ones: an export selects by run, so nothing is new to it
    assert "changelog" in compaction.compact(Ledger(warehouse), compaction.CompactionPolicy(min_files=2))
    again = FolderExport(spark, warehouse, str(out), fmt).run()
    assert again.written is None and again.progress.last_run == second.progress.last_run
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == listing
    assert json.loads((out / PROGRESS_FILE).read_text())["last_run"] == 2
    if fmt == "bigquery":  # BigQuery's order per key is commit order, across increments
        key1 = [line for line in lines if line["Id"] == "1"]
        by_bigquery = sorted(key1, key=functools.cmp_to_key(
            lambda a, b: compare_sequence_numbers(a["_CHANGE_SEQUENCE_NUMBER"], b["_CHANGE_SEQUENCE_NUMBER"])))
        assert [line["V"] for line in by_bigquery] == ["a", "late", "c"]
    else:
        assert all(line["source_metadata"]["database"] == "projects/p/instances/i/databases/d" for line in lines)


def test_two_sources_with_same_named_tables_are_exported_apart(spark, tmp_path):
    warehouse = str(tmp_path / "warehouse")
    commit_run(warehouse, [_v(1, 10, "x1", source=("p", "i", "orders")), _v(1, 10, "y1", source=("p", "i", "billing")),
                           _v(2, 20, "y2", source=("p", "i", "billing"))])
    for database, values in (("orders", ["x1"]), ("billing", ["y1", "y2"])):
        out = tmp_path / database
        FolderExport(spark, warehouse, str(out), "bigquery", Selection(database=database)).run()
        assert sorted(line["V"] for line in _lines(out)) == values
        assert {p.name for p in out.glob("increment=000001/*/*/*")} == {f"source_database={database}"}
    both = tmp_path / "both"
    FolderExport(spark, warehouse, str(both), "bigquery").run()
    assert len(_lines(both)) == 3 and len(list(both.glob("increment=000001/*/*/*"))) == 2
    with pytest.raises(ConfigurationError, match=r"holds an export of --source-database orders, not of "
                                                 r"--source-database billing"):
        FolderExport(spark, warehouse, str(tmp_path / "orders"), "bigquery", Selection(database="billing")).run()
    with pytest.raises(ConfigurationError, match="--table Nope: not in the changelog"):
        FolderExport(spark, warehouse, str(tmp_path / "nope"), "bigquery", Selection(tables=("Nope",))).run()
    view = _all(spark, warehouse)
    from watcher.changelog.exports import source_filter
    assert source_filter(view, database="billing").count() == 2 and source_filter(view, project="q").count() == 0


def test_since_filters_by_exact_commit_time_and_is_kept_by_the_target(spark, tmp_path):
    warehouse, out = str(tmp_path / "warehouse"), str(tmp_path / "out")
    commit_run(warehouse, [_v(1, 5, "a"), _v(2, 6, "b"), _v(3, 7, "c")])
    selection = Selection(since=exact(5))
    assert FolderExport(spark, warehouse, out, "bigquery", selection).run().written.rows == {"T": 2}
    with pytest.raises(ConfigurationError, match="--since 2024-05-01T10:00:00.000000006Z"):
        FolderExport(spark, warehouse, out, "bigquery", Selection(since=exact(6))).run()


@pytest.mark.parametrize("kill_after", ["write", "publish"])
def test_an_export_killed_before_recording_its_progress_repeats_nothing(spark, tmp_path, kill_after):
    warehouse, out = str(tmp_path / "warehouse"), tmp_path / "out"
    commit_run(warehouse, [_v(k, 10 * k, f"v{k}") for k in range(1, 5)])
    if kill_after == "publish":  # the worst moment, in a child SIGKILLed right after its files are in place
        child = subprocess.run([sys.executable, str(CHILD), warehouse, str(out), "bigquery", kill_after], cwd=ROOT,
                               capture_output=True, text=True, timeout=300)
        assert child.returncode == -9, child.stderr[-3000:]
        assert (out / "increment=000001").is_dir() and not (out / PROGRESS_FILE).exists()
    else:  # the same state without a second Spark: the pending folder written, nothing published
        export = FolderExport(spark, warehouse, str(out), "bigquery")
        export.write(export.plan())
        assert (out / "_pending" / "increment=000001").is_dir() and not list(out.glob("increment=*"))
    commit_run(warehouse, [_v(9, 5, "late")])
    done = FolderExport(spark, warehouse, str(out), "bigquery").run()
    assert (done.adopted is not None) == (kill_after == "publish")
    lines = _lines(out)
    assert sorted(line["V"] for line in lines) == ["late", "v1", "v2", "v3", "v4"]
    assert len({line["_CHANGE_SEQUENCE_NUMBER"] for line in lines}) == 5
    assert done.progress.last_run == 2 and not (out / "_pending").exists()
    assert [i.last_run for i in done.progress.increments] == ([1, 2] if kill_after == "publish" else [2])


def test_an_export_folder_refuses_other_files_and_formats(spark, tmp_path):
    warehouse, out = str(tmp_path / "warehouse"), tmp_path / "out"
    commit_run(warehouse, [_v(1, 10, "a")])
    FolderExport(spark, warehouse, str(out), "bigquery").run()
    with pytest.raises(ConfigurationError, match="holds a bigquery export, not datastream"):
        FolderExport(spark, warehouse, str(out), "datastream").run()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with pytest.raises(ConfigurationError, match="holds other files \\(notes.txt\\)"):
        FolderExport(spark, warehouse, str(tmp_path / "other"), "bigquery").run()
    with pytest.raises(ChangelogError, match="no changelog in"):
        FolderExport(spark, str(tmp_path / "empty"), str(tmp_path / "o2"), "bigquery").run()


# --- incremental export into Spanner ------------------------------------------------------------------------


def test_spanner_export_is_incremental_and_idempotent(spark, make_database, tmp_path):
    db = make_database()
    warehouse = str(tmp_path / "warehouse")
    commit_run(warehouse, [_v(1, 100, "a"), _v(2, 200, "b", source=("p", "i", "other"))])
    first = SpannerExport(spark, warehouse, db, "History", batch_rows=1).run()
    assert first.written == 2 and first.progress.last_run == 1
    commit_run(warehouse, [_v(1, 50, "late"), _v(1, 300, "c")])
    # a crash after writing run 2's rows and before moving the progress: written again, replacing themselves
    crashed = SpannerExport(spark, warehouse, db, "History")
    assert crashed.write(crashed.plan()) == 2
    second = SpannerExport(spark, warehouse, db, "History").run()
    assert second.written == 2 and second.progress.last_run == 2
    assert SpannerExport(spark, warehouse, db, "History").run().written == 0
    with db.snapshot() as snap:
        got = list(snap.execute_sql("SELECT SourceDatabase, Keys, CommitTimestamp, ChangeId, NewValues FROM History "
                                    "ORDER BY KeyHash, TableName, Keys, CommitTimestamp"))
    assert len(got) == 4 and len({r[3] for r in got}) == 4
    history = [json.loads(r[4])["V"] for r in got if r[0] == "d"]
    assert history == ["late", "a", "c"]  # one key's history in commit order, the late row in its place
    with db.snapshot() as snap:
        progress = list(snap.execute_sql(f"SELECT ChangelogTable, LastRun, Increments, RowsExported FROM {PROGRESS_TABLE}"))
    assert progress == [["History", 2, 2, 4]]
    only = SpannerExport(spark, warehouse, db, "History", Selection(database="other")).run()
    assert only.written == 1 and only.progress.last_run == 2  # its own progress row


def test_spanner_export_into_a_postgresql_database(spark, make_database, tmp_path):
    """The same export into a PostgreSQL database: both tables are created in its spellings with the names as
    given, the rows and the progress row written and read there, and a second export adds only the new run."""
    from google.cloud.spanner_admin_database_v1 import DatabaseDialect

    from watcher.changelog.exports.spanner_table import COLUMNS, create_table_ddl, write_to_database

    db = make_database((), database_dialect=DatabaseDialect.POSTGRESQL)
    warehouse = str(tmp_path / "warehouse")
    commit_run(warehouse, [_v(1, 100, "a"), _v(2, 200, "b", source=("p", "i", "other"))])
    first = SpannerExport(spark, warehouse, db, "History", batch_rows=1).run()
    assert first.written == 2 and first.progress.last_run == 1
    commit_run(warehouse, [_v(1, 300, "c")])
    second = SpannerExport(spark, warehouse, db, "History").run()
    assert second.written == 1 and second.progress.last_run == 2
    assert SpannerExport(spark, warehouse, db, "History").run().written == 0

    def query(sql):
        with db.snapshot() as snap:
            return [list(r) for r in snap.execute_sql(sql)]

    got = query('SELECT "SourceDatabase", "Keys", "ChangeType", "NewValues", "ExportedAt" IS NOT NULL FROM "History" '
                'ORDER BY "KeyHash", "TableName", "Keys", "CommitTimestamp"')
    assert [json.loads(r[3])["V"] for r in got if r[0] == "d"] == ["a", "c"] and len(got) == 3
    assert all(r[2] == "UPSERT" and r[4] for r in got)
    assert query(f'SELECT "ChangelogTable", "LastRun", "Increments", "RowsExported" FROM "{PROGRESS_TABLE}"') == \
        [["History", 2, 2, 3]]
    types = dict(query("SELECT column_name, spanner_type FROM information_schema.columns "
                       "WHERE table_schema = 'public' AND table_name = 'History'"))
    assert list(types) == [name for name, _, _ in COLUMNS]
    assert (types["KeyHash"], types["RecordSequence"], types["CommitTimestamp"], types["ExportedAt"]) == \
        ("character varying(16)", "bigint", "timestamp with time zone", "spanner.commit_timestamp")
    # The changelog DataFrame straight into a table it creates (write_to_database, as the reconcile test does).
    changelog = _all(spark, tmp_path / "warehouse")
    assert write_to_database(changelog, db, "Direct", batch_rows=2) == changelog.count() == 3
    assert query('SELECT count(*) FROM "Direct"') == [[3]]
    assert create_table_ddl("Direct").startswith("CREATE TABLE `Direct`")  # GoogleSQL stays the default spelling


# --- the export command --------------------------------------------------------------------------------------


def test_the_export_command_adds_new_runs_and_says_so(spark, tmp_path, capsys):
    from watcher.cli.main import main

    warehouse, out = str(tmp_path / "warehouse"), str(tmp_path / "out")
    commit_run(warehouse, [_v(1, 10, "a", source=("p", "i", "orders")), _v(1, 10, "z", source=("p", "i", "other"))])
    argv = ["export", "--warehouse", warehouse, "--format", "bigquery", "--out", out, "--source-database", "orders"]
    assert main(argv) == 0
    assert f"wrote bigquery export of version 1 to {out} (increment 1: 1 rows" in capsys.readouterr().out
    assert main(argv) == 0
    assert capsys.readouterr().out.strip() == f"nothing new for {out}: it holds the changelog up to run 1"
    assert main([*argv[:-1], "other"]) == 2
    assert "holds an export of --source-database orders, not of --source-database other" in capsys.readouterr().err
    assert main([*argv, "--since", "yesterday"]) == 2
    assert "--since yesterday: not an RFC 3339 timestamp" in capsys.readouterr().err
    assert [line["V"] for line in _lines(Path(out))] == ["a"]
