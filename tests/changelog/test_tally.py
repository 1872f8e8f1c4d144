"""The run's tally: merging per-group aggregates, the batch checks and timestamp texts (no Spark)."""

from __future__ import annotations

import itertools

import pytest

from watcher.changelog.engines.tally import from_groups, merge_batch, nanos_text
from watcher.changelog.input.staging_reader import check_batches
from watcher.changelog.io.fs import FileEntry
from watcher.changelog.rules.batch_seq import seq_ok


def group(batch="table=T/b1.jsonl", *, seqs=(0, 1), table="T", date="2024-05-01", mod="UPDATE", dup=False, late=False,
          src=1, bad=0, v=1, read_ns=5, commit_ns=3, finals=0, shard=None):
    return {"_src": src, "batch": batch, "table_name": table, "commit_date": date, "mod_type": mod, "_is_dup": dup,
            "_is_late": late, "shard": shard, "read_method": "cdc", "n": len(seqs), "bad": bad,
            "min_seq": min(seqs), "max_seq": max(seqs), "sum_seq": sum(seqs), "sum_seq2": sum(s * s for s in seqs),
            "max_v": v, "read_ts_ns": read_ns, "max_commit_ns": commit_ns, "finals": finals,
            "new_finals": finals if src == 1 else 0}


def test_a_batch_split_over_groups_is_merged_back():
    parts = [group(seqs=(0, 2), date="2024-05-01", commit_ns=7), group(seqs=(1, 3), date="2024-05-02", mod="UPSERT",
                                                                        commit_ns=9, read_ns=11)]
    merged = merge_batch(parts)
    assert (merged["n"], merged["min_seq"], merged["max_seq"]) == (4, 0, 3)
    assert seq_ok(merged) and merged["tables"] == ["T"]
    assert merged["max_commit"] == nanos_text(9) and merged["read_ts"] == nanos_text(11)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_seq_check_accepts_exactly_the_numbers_0_to_n_minus_1(n):
    for seqs in itertools.product(range(n + 1), repeat=n):
        parts = [group(seqs=(s,)) for s in seqs]
        assert seq_ok(merge_batch(parts)) == (sorted(seqs) == list(range(n))), seqs


def test_an_overflowing_sum_of_squares_is_not_a_good_batch():
    merged = merge_batch([group(seqs=(0, 1)) | {"sum_seq2": None}])
    assert not seq_ok(merged)


def test_outcomes_are_counted_per_table_date_and_fate_and_state_rows_per_table():
    tally = from_groups([group(seqs=(0, 1)), group("table=T/b2.jsonl", seqs=(0,), dup=True),
                         group("table=U/b3.jsonl", seqs=(0, 1, 2), table="U", mod="UPSERT", finals=3),
                         group(None, seqs=(0,) * 4, src=0, date=None, mod=None, finals=4)])
    counts = {(c.table_name, c.mod_type, c.is_dup): c.count for c in tally.counts}
    assert counts == {("T", "UPDATE", False): 2, ("T", "UPDATE", True): 1, ("U", "UPSERT", False): 3}
    assert tally.tables == {"T", "U"} and tally.state_rows == {"U": 3, "T": 4} and tally.new_state_rows == {"U": 3}
    assert set(tally.batches) == {"table=T/b1.jsonl", "table=T/b2.jsonl", "table=U/b3.jsonl"}


def test_batch_check_names_each_kind_of_bad_file():
    files = [FileEntry(f"file:/s/table=T/{name}.jsonl", 10, 0) for name in ("ok", "empty", "badline", "newer", "gap", "two")]
    batches = {
        "table=T/ok.jsonl": merge_batch([group(seqs=(0, 1))]),
        "table=T/badline.jsonl": merge_batch([group(seqs=(0, 1), bad=1)]),
        "table=T/newer.jsonl": merge_batch([group(seqs=(0,), v=99)]),
        "table=T/gap.jsonl": merge_batch([group(seqs=(0, 2))]),
        "table=T/two.jsonl": merge_batch([group(seqs=(0,)), group(seqs=(1,), table="U")]),
    }
    stats, bad = check_batches(batches, files)
    assert [s.batch for s in stats] == ["table=T/ok.jsonl"] and stats[0].records == 2
    assert bad["table=T/empty.jsonl"].startswith("empty file (10 bytes")
    assert "1 of 2 lines are not valid" in bad["table=T/badline.jsonl"]
    assert "newer staging format (v=99" in bad["table=T/newer.jsonl"]
    assert "lines lost or repeated" in bad["table=T/gap.jsonl"]
    assert "several tables (T, U)" in bad["table=T/two.jsonl"]


@pytest.mark.parametrize("nanos,text", [
    (0, "1970-01-01T00:00:00.000000000Z"),
    (1_714_557_600_000_000_050, "2024-05-01T10:00:00.000000050Z"),
    (-1, "1969-12-31T23:59:59.999999999Z"),
    (None, None),
])
def test_nanos_text(nanos, text):
    assert nanos_text(nanos) == text
