"""Generated input for tests that run the driver engine and Spark's side by side.

Strings that need every kind of JSON escape, and runs of staged batches over two tables (a key
of one column and one of two): updates, deletes and returns of a few keys per run, commits
shared across keys and tables, a batch staged twice, a late change, a new column.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
from pathlib import Path

from tests.changelog.support import Stager, ts
from watcher.changelog import views
from watcher.model import Change

#: Strings that need every kind of escape Spark's JSON writer knows, and some it does not.
HARD = ["", "plain", 'q"uote', "back\\slash", "\\u0041", "\b\t\n\f\r", "\x00\x01\x1f\x7f", "é日本", "😀x😀", "\u2028\u2029",
        "/", "\ufeff", "\ud7ff\ue000\uffff", "NaN", "Infinity", "true", "null"]

TYPES = {"Alpha": {"Id": "INT64", "Name": "STRING(MAX)", "Score": "FLOAT64", "On": "BOOL", "Tags": "ARRAY<STRING(MAX)>",
                   "Amount": "NUMERIC", "Raw": "BYTES(MAX)", "At": "TIMESTAMP"},
         "Beta": {"Id": "INT64", "Part": "STRING(MAX)", "Name": "STRING(MAX)", "Score": "FLOAT64"}}
KEYS = {"Alpha": ["Id"], "Beta": ["Id", "Part"]}
KEY_COUNT = 40


def table_row(rng: random.Random, table: str, key: tuple, schema_change: bool, odd_float: bool) -> dict:
    """A row of ``table`` with ``key``: hard strings, every kind of value; a new column, or a float Java
    prints otherwise, when asked."""
    values = dict(zip(KEYS[table], key, strict=True))
    values["Name"] = rng.choice(HARD + ["x", "y"])
    values["Score"] = rng.choice([1e300, 1e-7] if odd_float else [1.5, 2.0, 0.25, 3.0])  # odd: Java prints them otherwise
    if table == "Alpha":
        values.update(On=rng.random() < 0.5, Tags=[rng.choice(HARD), "t"], Amount=decimal.Decimal(rng.choice(["1.50", "-3"])),
                   Raw=rng.choice([b"\x00\xff", b"ab"]), At=dt.datetime(2024, 5, 1, rng.randrange(24), tzinfo=dt.UTC))
    if schema_change:
        values["Added"] = "new column"  # an update off the old values' fast path: Spark's run
    return values


def stage_run(stager: Stager, rng: random.Random, run: int, tables=("Alpha", "Beta"), *, quirks: bool = True,
              odd: bool = False) -> None:
    """One run's batches: updates, deletes and returns of a few keys per table, commits shared across
    keys and tables, sometimes a batch staged twice, a change older than the state, a new column."""
    base = run * 1_000_000
    odd_float = odd or quirks and rng.random() < 0.1  # one row of the run: the run is Spark's
    new_column = quirks and rng.random() < 0.1  # one row of the run: its update is off the fast path
    for table in tables:
        # the first run stages every key, later ones a few (as deltas: the state is rewritten whole only now and then)
        numbers = range(KEY_COUNT) if run == 0 else rng.sample(range(KEY_COUNT + 3), 5)
        keys = [(k,) if table == "Alpha" else (k, "p" if run == 0 else rng.choice([None, "p", "é"])) for k in numbers]
        changes, mods = [], []
        for n, key in enumerate(keys):
            for version in range(rng.randrange(1, 3)):
                commit = base + (n % 3) * 1000 + version * 10  # keys share commits within and across tables
                mod = rng.choice([None, None, None, "DELETE", "INSERT"]) if quirks else None
                odd_one, odd_float = odd_float, False
                added, new_column = new_column, False
                changes.append(Change(table, key, table_row(rng, table, key, added, odd_one), ts(commit), None, ts(base + 5000)))
                mods.append(mod)
        late = quirks and rng.random() < 0.1 and run > 1
        if late:  # a change older than what earlier runs wrote for the key
            changes[0] = Change(table, changes[0].keys, changes[0].row, ts(base - 1_500_000), None, ts(base + 5000))
        batch = stager.sink.write(changes, {**TYPES[table], "Added": "STRING(MAX)"}, KEYS[table], mod_types=mods)
        if quirks and rng.random() < 0.15:  # the same batch staged again (a crash before the checkpoint)
            Path(batch).with_name("again-" + Path(batch).name).write_bytes(Path(batch).read_bytes())


def views_of(spark, warehouse: str, *, but: tuple[str, ...] = ()) -> dict:
    """Every row of the warehouse's views (but the columns ``but``), as sorted JSON texts."""
    views.register_views(spark, warehouse)
    return {name: sorted(json.dumps({k: v for k, v in r.asDict(recursive=True).items() if k not in but},
                                    default=str, sort_keys=True)
                         for r in spark.sql(f"SELECT * FROM {name}").collect())
            for name in ("changelog", "current_state", "watermarks")}


def tables_of(warehouse: str) -> dict:
    """Every Delta table of the warehouse but ``runs`` (whose start times differ), as delta-rs reads
    it: its schema and its rows as sorted JSON texts."""
    from deltalake import DeltaTable

    out = {}
    for name in ("changelog", "current_state", "watermarks"):
        table = DeltaTable(f"{warehouse}/{name}")
        rows = table.to_pyarrow_table().to_pylist()
        out[name] = (str(table.schema()), table.metadata().partition_columns,
                     sorted(json.dumps(r, default=str, sort_keys=True) for r in rows))
    return out


def report(result) -> dict:
    """A run's summary without what differs between engines that wrote the same rows."""
    summary = result.summary()
    for noise in ("seconds", "phases", "engine", "engine_note", "old_values_by", "quarantined", "changelog_visible_at"):
        summary.pop(noise)
    return summary

