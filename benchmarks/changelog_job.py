"""The changelog job against a plain Spark read + Delta append, and an incremental run against a plain MERGE.

1,000,000 staged changes over 10 tables (10,000 keys per table, 10 versions of each key,
commits spread over 10 days, 100 batch files of 1,000 changes per table) are generated
directly as staging files (watcher.staging.contract's records). In one Spark session
(local[2], Delta loaded):

* baseline: ``spark.read.json`` of those files with the staging schema, appended to a Delta table;
* floor: the same read, each key's versions in commit order (a shuffle by key, a sort, one
  window) and a Delta append partitioned by table and commit date, as every changelog run needs
  (no state, old values, ids or groups): a figure beside the target, how much of it any job pays;
* first run: the changelog job over the same files (dedup, classify, old values, groups; the
  ``changelog``, ``current_state`` and ``watermarks`` Delta tables committed as one run);
  the pair is timed :data:`PAIRS` times (each first run into an empty warehouse), medians reported;
* incremental: a second warehouse whose state holds 1,000,000 keys (10 tables x 100,000 keys,
  one version each, one first run), then 10,000 new changes (updates of existing keys, on the
  next day) staged as 10 more files and the job again, against a plain Delta ``MERGE`` of the same
  10,000 rows (the state rows of those keys, one column changed) into a copy of the same
  ``current_state`` table (matched: update, else insert). Both are timed :data:`SECOND_RUNS`
  times, each from a copy of the warehouse the first run left; medians reported.

Targets: first run <= 1.6x the baseline (the median of the pairs' ratios); the incremental run
<= 2.0x the plain MERGE (medians). Both code paths are warmed up on a small data set first, so
that neither pays the JVM's (or Python's imports') warm-up.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import statistics
import time
from typing import Any

from watcher.staging import contract

from . import Result, RunContext, check

NAME = "changelog_job"
TITLE = "changelog job: 1M staged changes vs plain Spark read+write; 10K-change incremental run"

FULL = {"tables": 10, "keys_per_table": 10_000, "versions": 10, "batch_size": 1_000, "new_changes": 10_000,
        "state_keys_per_table": 100_000}
QUICK = {"tables": 10, "keys_per_table": 200, "versions": 10, "batch_size": 500, "new_changes": 1_000,
         "state_keys_per_table": 1_000}
TARGET_FIRST_RATIO = 1.6
TARGET_INCREMENTAL_RATIO = 2.0
#: The plain read + write and the first run are timed side by side this many times (medians reported).
PAIRS = 3
#: The second run is timed this many times, each from a copy of the same warehouse (median reported).
SECOND_RUNS = 3
TYPES = {"Id": "INT64", "Name": "STRING(MAX)", "Score": "FLOAT64", "Amount": "NUMERIC", "Active": "BOOL",
         "Tags": "ARRAY<STRING(MAX)>", "LastUpdated": "TIMESTAMP"}
DAY_SECONDS = 86_400
EPOCH_DAY0 = 1_714_521_600  # 2024-05-01T00:00:00Z


@functools.cache
def _date(day: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(day * DAY_SECONDS))


def _ts(seconds: int, nanos: int) -> str:
    """The staging text of a UTC time (``seconds`` since the epoch and ``nanos``), without strftime per call.

    >>> _ts(EPOCH_DAY0 + 3_723, 5)
    '2024-05-01T01:02:03.000000005Z'
    """
    day, rest = divmod(seconds, DAY_SECONDS)
    hours, rest = divmod(rest, 3600)
    return f"{_date(day)}T{hours:02d}:{rest // 60:02d}:{rest % 60:02d}.{nanos:09d}Z"


def _record(table: str, batch_id: str, seq: int, key: int, version: int, commit: str, read: str) -> dict[str, Any]:
    values = {"Id": str(key), "Name": f"name-{key}-{version}", "Score": key * 0.5 + version,
              "Amount": f"{key}.{version:02d}", "Active": version % 2 == 0, "Tags": ["t", str(version)],
              "LastUpdated": commit}
    return contract.record(batch_id=batch_id, seq=seq, table=table, key_columns=["Id"], keys=[str(key)],
                           commit_timestamp=commit, read_timestamp=read, watcher_id="bench", values=values, types=TYPES)


_TYPES_JSON = json.dumps(TYPES, separators=(",", ":"))


def _line(table: str, batch_id: str, seq: int, key: int, version: int, commit: str, read: str) -> str:
    """:func:`_record`'s batch line, formatted directly (ten times faster than building and dumping
    the record; :func:`_generate_table` checks it against the contract's line)."""
    values = (f'{{"Id":"{key}","Name":"name-{key}-{version}","Score":{key * 0.5 + version!r},'
              f'"Amount":"{key}.{version:02d}","Active":{"true" if version % 2 == 0 else "false"},'
              f'"Tags":["t","{version}"],"LastUpdated":"{commit}"}}')
    return (f'{{"v":{contract.STAGING_FORMAT},"batch_id":"{batch_id}","seq":{seq},"table":"{table}",'
            f'"key_columns":["Id"],"keys":["{key}"],"commit_timestamp":"{commit}","read_timestamp":"{read}",'
            f'"shard":null,"watcher_id":"bench","read_method":"cdc","mod_type":null,"values":{values},'
            f'"types":{_TYPES_JSON}}}\n')


def _generate_table(staging: str, s: dict[str, Any], t: int, day: int, versions: range, keys: range, tag: str) -> int:
    """Write table ``t``'s batch files (see :func:`generate`); returns the changes written."""
    per_day = max(1, len(versions) // 10) if len(versions) > 1 else 1
    table = f"Table{t:02d}"
    os.makedirs(os.path.join(staging, contract.table_folder(table)), exist_ok=True)
    changes = [(v, k) for v in versions for k in keys]
    for b in range(0, len(changes), s["batch_size"]):
        chunk = changes[b:b + s["batch_size"]]
        batch_id = f"{tag}-{t:02d}-{b // s['batch_size']:05d}"
        lines = []
        for seq, (v, k) in enumerate(chunk):
            seconds = EPOCH_DAY0 + (day + (v - versions.start) // per_day) * DAY_SECONDS + k
            # Each change its own commit timestamp (its group alone), or with ``shared_commits`` the
            # tables' changes of one key and version sharing one (transaction groups of ten).
            commit = _ts(seconds, v * 1000 + (0 if s.get("shared_commits") else t))
            lines.append(_line(table, batch_id, seq, k, v, commit, _ts(seconds + 1, 0)))
            if seq == 0:  # the template must stay the contract's record, byte for byte
                expected = contract.batch_text([_record(table, batch_id, seq, k, v, commit, _ts(seconds + 1, 0))])
                if lines[0] != expected:
                    raise AssertionError(f"benchmark line template differs from the contract:\n{lines[0]}{expected}")
        with open(os.path.join(staging, contract.staged_name(table, batch_id)), "w", encoding="utf-8") as f:
            f.write("".join(lines))
    return len(changes)


def generate(staging: str, s: dict[str, Any], *, day: int, versions: range, keys: range, tag: str,
             workers: int = 1) -> int:
    """Write batch files: each table's changes for ``versions`` x ``keys``, commits spread over the day(s).

    ``workers`` > 1 writes the tables in that many processes (spawned: the caller may run a JVM).
    """
    args = [(staging, s, t, day, versions, keys, tag) for t in range(s["tables"])]
    if workers <= 1:
        return sum(_generate_table(*a) for a in args)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return sum(pool.map(_generate_table, *zip(*args, strict=True)))


def _session() -> Any:
    from pyspark.sql import SparkSession

    from watcher.changelog.tables import runtime

    builder = (SparkSession.builder.master("local[2]").appName("bench-changelog")
               .config("spark.driver.memory", "6g").config("spark.sql.shuffle.partitions", "4")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC"))
    for key, value in {**runtime.LOCAL_DELTA_SETTINGS, **runtime.spark_settings({})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _read(spark: Any, staging: str) -> Any:
    """A plain Spark read of the staged files, with the staging schema."""
    from watcher.changelog.rules import records

    return spark.read.schema(records.schema(records.STAGING_FIELDS)).json(os.path.join(staging, contract.BATCH_GLOB))


def _baseline(spark: Any, staging: str, out: str) -> float:
    """A plain Spark read of the staged files and a plain Delta append of their rows."""
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    _read(spark, staging).write.format("delta").mode("append").save(out)
    return time.perf_counter() - started


#: The least any changelog of these files costs: each key's versions in commit order (a shuffle by
#: key, a sort, one window giving each row its previous row) appended to a Delta table partitioned
#: by table and commit date, as the changelog is. No state, old values, ids or groups.
_FLOOR_WINDOW = "OVER (PARTITION BY `table`, keys ORDER BY commit_timestamp, seq)"


def _floor(spark: Any, staging: str, out: str) -> float:
    """The plain read, then the per-key order and the partitioned append every changelog run needs."""
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    rows = _read(spark, staging).repartition("table", "keys").sortWithinPartitions("table", "keys", "commit_timestamp",
                                                                                    "seq")
    (rows.selectExpr("*", f"lag(`values`) {_FLOOR_WINDOW} AS previous_values",
                     "substring(commit_timestamp, 1, 10) AS commit_date")
     .write.format("delta").partitionBy("table", "commit_date").mode("append").save(out))
    return time.perf_counter() - started


def _job(spark: Any, staging: str, warehouse: str) -> tuple[float, Any]:
    from watcher.changelog import Changelog

    started = time.perf_counter()
    result = Changelog(spark).staging(staging).warehouse(warehouse).run()
    return time.perf_counter() - started, result


#: The columns the state's MERGE matches on (one row per key of a source database's table).
STATE_KEY = ("source_project", "source_instance", "source_database", "table_name", "keys")


def _plain_merge(spark: Any, state: str, keys: list[tuple[str, str]]) -> float:
    """A plain Delta MERGE into the ``current_state`` table at ``state`` of its own rows of ``keys``
    ((table, keys JSON) pairs) with ``run_version`` changed: matched rows updated, others inserted."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    wanted = spark.createDataFrame(keys, "table_name STRING, keys STRING")
    started = time.perf_counter()
    rows = (spark.read.format("delta").load(state).join(F.broadcast(wanted), ["table_name", "keys"])
            .withColumn("run_version", F.col("run_version") + 1))
    condition = " AND ".join(f"t.{c} <=> s.{c}" for c in STATE_KEY)
    table = DeltaTable.forPath(spark, state)
    table.alias("t").merge(rows.alias("s"), condition).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    seconds = time.perf_counter() - started
    last = table.history(1).first()
    updated = int(last["operationMetrics"]["numTargetRowsUpdated"]) if last["operation"] == "MERGE" else 0
    if updated != len(keys):  # a key text that matched nothing would time an empty MERGE
        raise AssertionError(f"plain MERGE updated {updated} state rows, not the {len(keys)} of the changed keys")
    return seconds


def _keys_json(key: int) -> str:
    """The ``keys`` text of the benchmark tables' one-column key, as the changelog writes it.

    >>> _keys_json(7)
    '{"Id":"7"}'
    """
    return json.dumps({"Id": str(key)}, separators=(",", ":"))


def run(ctx: RunContext) -> Result:
    return measure(ctx, QUICK if ctx.quick else FULL, NAME)


def measure(ctx: RunContext, s: dict[str, Any], name: str) -> Result:
    """The pairs, and the incremental run against a plain MERGE, over the changes ``s`` describes
    (work files under ``name``)."""
    root = os.path.join(ctx.workdir, name)
    shutil.rmtree(root, ignore_errors=True)
    staging, warehouse, plain = (os.path.join(root, n) for n in ("staging", "warehouse", "plain"))
    spark = _session()

    warm = os.path.join(root, "warmup")
    tiny = {**QUICK, "keys_per_table": 20}
    generate(os.path.join(warm, "staging"), tiny, day=0, versions=range(2), keys=range(20), tag="w")
    _baseline(spark, os.path.join(warm, "staging"), os.path.join(warm, "plain"))
    _floor(spark, os.path.join(warm, "staging"), os.path.join(warm, "floor"))
    _job(spark, os.path.join(warm, "staging"), os.path.join(warm, "warehouse"))
    generate(os.path.join(warm, "staging"), {**tiny, "batch_size": 10}, day=10, versions=range(2, 3), keys=range(10),
             tag="x")
    _job(spark, os.path.join(warm, "staging"), os.path.join(warm, "warehouse"))
    _plain_merge(spark, os.path.join(warm, "warehouse", "current_state"), [("Table00", _keys_json(k)) for k in range(5)])
    ctx.log("warmed up")

    started = time.perf_counter()
    total = generate(staging, s, day=0, versions=range(s["versions"]), keys=range(s["keys_per_table"]), tag="a",
                     workers=2)
    ctx.log(f"staged {total} changes in {time.perf_counter() - started:.1f} s")
    # The pair side by side, several times: one pair's ratio moves with the machine's moment.
    # The floor beside them: how much of the ratio any changelog of these files pays.
    baselines, firsts, ratios, floors, floor_ratios = [], [], [], [], []
    for n in range(PAIRS):
        shutil.rmtree(warehouse, ignore_errors=True)
        baseline = _baseline(spark, staging, plain)
        floor = _floor(spark, staging, plain + "-floor")
        first, r1 = _job(spark, staging, warehouse)
        baselines.append(round(baseline, 2))
        firsts.append(round(first, 2))
        ratios.append(round(first / baseline, 2))
        floors.append(round(floor, 2))
        floor_ratios.append(round(floor / baseline, 2))
        ctx.log(f"pair {n + 1}: plain read + Delta append {baseline:.1f} s, floor {floor:.1f} s "
                f"({floor / baseline:.2f}x), first run {first:.1f} s ({r1.changes_written} changes): "
                f"{first / baseline:.2f}x")
    baseline, first, ratio, floor, floor_ratio = (statistics.median(v) for v in (baselines, firsts, ratios, floors,
                                                                                   floor_ratios))
    rows = spark.read.format("delta").load(os.path.join(warehouse, "changelog")).count()
    for folder in (staging, warehouse, plain, plain + "-floor"):
        shutil.rmtree(folder, ignore_errors=True)

    # The incremental run over a state of tables x state_keys_per_table keys.
    state_keys = s["state_keys_per_table"]
    generate(staging, {**s, "batch_size": 10_000}, day=0, versions=range(1), keys=range(state_keys), tag="s", workers=2)
    took, r0 = _job(spark, staging, warehouse)
    ctx.log(f"state: first run over {r0.changes_written} changes of {s['tables'] * state_keys} keys in {took:.1f} s")
    per_table = s["new_changes"] // s["tables"]
    new = generate(staging, {**s, "batch_size": per_table}, day=10, versions=range(1, 2), keys=range(per_table), tag="b")
    changed = [(f"Table{t:02d}", _keys_json(k)) for t in range(s["tables"]) for k in range(per_table)]
    before = os.path.join(root, "warehouse-before-incremental")
    shutil.copytree(warehouse, before)
    seconds, merges = [], []
    for n in range(SECOND_RUNS):
        shutil.rmtree(warehouse)
        shutil.copytree(before, warehouse)
        merges.append(round(_plain_merge(spark, os.path.join(warehouse, "current_state"), changed), 3))
        shutil.rmtree(warehouse)
        shutil.copytree(before, warehouse)
        took, r2 = _job(spark, staging, warehouse)
        seconds.append(round(took, 3))
        ctx.log(f"incremental {n + 1}: plain MERGE {merges[-1]:.2f} s, run {took:.2f} s "
                f"({r2.changes_written} changes, {r2.batches_read} batches): {took / merges[-1]:.2f}x")
    second, merge = statistics.median(seconds), statistics.median(merges)
    state_rows = spark.read.format("delta").load(os.path.join(warehouse, "current_state")).count()

    result = Result(settings={"shared_commits": False, **s, "changes": total, "new_changes": new, "master": "local[2]",
                              "shuffle_partitions": 4, "pairs": PAIRS, "second_runs": SECOND_RUNS,
                              "baseline": "spark.read.json(staged files, staging schema).write.format('delta').save()",
                              "floor": "the baseline's read, repartition and sort by (table, keys), lag(values) per "
                                       "key, Delta append partitioned by (table, commit date)",
                              "plain_merge": "DeltaTable.merge of the state rows of the 10,000 changed keys "
                                             "(run_version + 1) ON the state key; whenMatchedUpdateAll, "
                                             "whenNotMatchedInsertAll"})
    result.figures = {
        "baseline_seconds": round(baseline, 2), "first_run_seconds": round(first, 2), "first_vs_baseline": ratio,
        "baseline_runs": baselines, "first_runs": firsts, "first_vs_baseline_runs": ratios,
        "floor_seconds": round(floor, 2), "floor_vs_baseline": floor_ratio, "floor_runs": floors,
        "floor_vs_baseline_runs": floor_ratios, "first_vs_floor": round(first / floor, 2),
        "incremental_seconds": round(second, 3), "plain_merge_seconds": round(merge, 3),
        "incremental_vs_merge": round(second / merge, 3), "incremental_runs": seconds, "plain_merge_runs": merges,
        "first_run_changes": r1.changes_written, "incremental_changes": r2.changes_written,
        "incremental_batches": r2.batches_read, "state_keys": s["tables"] * state_keys, "state_rows": state_rows,
        "changelog_rows_first_run": rows, "mod_types_first": r1.mod_types, "mod_types_incremental": r2.mod_types,
        "phases_first": getattr(r1, "phases", None), "phases_incremental": getattr(r2, "phases", None),
    }
    result.checks = [check("first run / plain read + Delta append (median of the pairs)", ratio, "<=", TARGET_FIRST_RATIO),
                     check("incremental run / plain Delta MERGE of its rows (medians)", round(second / merge, 3), "<=",
                           TARGET_INCREMENTAL_RATIO),
                     check("changelog rows of the first run", rows, ">=", total),
                     check("state rows", state_rows, ">=", s["tables"] * state_keys)]
    result.notes.append("Generated staging files (StagingSink format), not a live watcher; all in one Spark session.")
    spark.stop()
    return result
