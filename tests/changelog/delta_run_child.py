"""A small changelog run over the warehouse's Delta tables, written with delta-rs, for the crash tests.

``python delta_run_child.py WAREHOUSE STAGING [KILL_AFTER]``: finishes the run a crash left open,
or begins one over the staged batches (JSON files: lists of ``{table, key, commit, values}``) that
no run consumed, and writes the tables it has not written, in the ledger's order; with KILL_AFTER
(a table name) it SIGKILLs itself right after that table's commit. The rules are the simplest
that show a repeat or a loss: a changelog row per staged change, the newest row per key merged
into the state, the newest commit per table as its watermark.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import signal
import sys
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from watcher.changelog.tables import layout
from watcher.changelog.tables.ledger import Ledger


def _changes(staging: Path, batches: tuple[str, ...]) -> list[dict]:
    return [dict(change, batch=name) for name in batches for change in json.loads((staging / name).read_text())]


def _timestamp(text: str) -> tuple[dt.datetime, int]:
    seconds, fraction = text.rstrip("Z").split(".")
    return dt.datetime.fromisoformat(seconds).replace(tzinfo=dt.UTC, microsecond=int(fraction[:6])), int(fraction)


def _changelog_rows(changes: list[dict], run: int) -> pa.Table:
    rows = []
    for change in changes:
        when, nanos = _timestamp(change["commit"])
        keys = json.dumps({"id": change["key"]})
        rows.append({"source_project": "p", "source_instance": "i", "source_database": "d",
                     "change_id": hashlib.sha256(f"{change['table']}|{keys}|{change['commit']}".encode()).hexdigest()[:32],
                     "table_name": change["table"], "keys": keys, "mod_type": "UPSERT",
                     "new_values": json.dumps(change["values"]), "commit_timestamp": when, "commit_nanos": nanos,
                     "commit_date": when.date(), "batch_id": change["batch"], "run_version": run})
    return pa.Table.from_pylist(rows, schema=layout.CHANGELOG.arrow_schema())


def main(warehouse: str, staging: Path, kill_after: str = "") -> None:
    ledger = Ledger(warehouse)
    ledger.create_tables()
    run = ledger.open_run()
    if run is None:
        fresh = sorted(p.name for p in staging.iterdir() if p.name not in ledger.consumed_batches())
        if not fresh:
            return
        run = ledger.begin(fresh)
    if kill_after == "runs":
        os.kill(os.getpid(), signal.SIGKILL)
    props = ledger.commit_properties(run)
    for table in run.pending():
        if table == "changelog":
            write_deltalake(ledger.uri(table), _changelog_rows(_changes(staging, run.batches), run.version),
                            mode="append", commit_properties=props)
        else:  # from the run's committed changelog rows, so a finished run's rows are what a repeat uses
            written = DeltaTable(ledger.uri("changelog")).to_pyarrow_table().to_pylist()
            mine = [r for r in written if r["run_version"] == run.version]
            if table == "current_state":
                newest: dict[tuple, dict] = {}
                for r in sorted(mine, key=lambda r: (r["commit_timestamp"], r["commit_nanos"])):
                    newest[(r["table_name"], r["keys"])] = r
                spec = layout.CURRENT_STATE
                source = pa.Table.from_pylist([{n: r.get(n) for n, _, _ in spec.fields} | {"is_deleted": False}
                                               for r in newest.values()], schema=spec.arrow_schema())
                on = "t.table_name = s.table_name AND t.keys = s.keys"
            else:
                spec = layout.WATERMARKS
                tops: dict[str, dict] = {}
                for r in mine:
                    if r["table_name"] not in tops or (r["commit_timestamp"], r["commit_nanos"]) > \
                            (tops[r["table_name"]]["watermark"], tops[r["table_name"]]["watermark_nanos"]):
                        tops[r["table_name"]] = {"source_project": "p", "source_instance": "i", "source_database": "d",
                                                 "table_name": r["table_name"], "watermark": r["commit_timestamp"],
                                                 "watermark_nanos": r["commit_nanos"], "run_version": run.version}
                source = pa.Table.from_pylist(list(tops.values()), schema=spec.arrow_schema())
                on = "t.table_name = s.table_name"
            (DeltaTable(ledger.uri(table)).merge(source, on, source_alias="s", target_alias="t", commit_properties=props)
             .when_matched_update_all().when_not_matched_insert_all().execute())
        if table == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), *(sys.argv[3:4]))
